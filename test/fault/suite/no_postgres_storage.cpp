// SPDX-License-Identifier: Apache-2.0
// A build without redlock::postgres (libpq was not found): no PostgreSQL
// storage, and the reason.
#include "fenced_storage.hpp"

namespace redlock::fault {

std::shared_ptr<fenced_storage> open_postgres_storage(const postgres_storage_options&, std::string& why_not) {
  why_not = "this build has no redlock::postgres (libpq-dev was not found when it was configured)";
  return nullptr;
}

}  // namespace redlock::fault
