// SPDX-License-Identifier: Apache-2.0
// A storage that fences itself, for the PostgreSQL variant of the nemesis
// (fault_nemesis_postgres): each critical section's write is a
// read-modify-write of its name's counter in one transaction that first
// fences the name with the holder's token (redlock::postgres_fenced_store),
// so a paused holder's late transaction is refused (errc::stale_token) and
// leaves nothing. The transaction also appends (name, section, token) to a
// table in commit order; check_fenced_data (register_check.hpp) judges that
// table at the end of the round.
//
// postgres_storage.cpp implements it when the build has redlock::postgres;
// no_postgres_storage.cpp otherwise (open_postgres_storage then says why
// there is none).
#pragma once

#include "register_check.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace redlock::fault {

class fenced_storage {
 public:
  using done_signature = void(boost::system::error_code);

  /// One client's connections to the storage. They run on a thread of the
  /// storage's (as the register links do: the clients' io threads, busy
  /// with the masters, only see the completions).
  class session {
   public:
    virtual ~session() = default;
    /// Counter `name` + 1 in one fenced transaction with `token`, logged as
    /// section `sid`. Success: committed. errc::stale_token: refused,
    /// nothing committed. Any other error: the outcome is unknown. `done`
    /// runs on its associated executor.
    virtual void async_increment(std::string name, std::uint64_t token, std::string sid,
                                 boost::asio::any_completion_handler<done_signature> done) = 0;
  };

  virtual ~fenced_storage() = default;
  virtual std::unique_ptr<session> open(std::size_t client) = 0;
  /// Every committed write and counter, read at the end of the round.
  virtual fenced_table read() = 0;
  /// What it is, for the round's description.
  virtual std::string describe() const = 0;
};

struct postgres_storage_options {
  /// Per statement (BEGIN with the fence, each statement, COMMIT).
  std::chrono::milliseconds timeout{500};
  /// TEST ONLY: each client fences in a table of its own, so no client's
  /// fence sees another's tokens: fencing as good as off (a paused holder's
  /// stale write commits), which the verdict must catch.
  bool fence_per_client = false;
};

/// A fresh database on the suite's PostgreSQL server (started at first use,
/// as the integration tests start theirs: test/support/postgres_process).
/// nullptr when there is no PostgreSQL to use, with `why_not` saying why
/// (the build has no libpq, or the server programs are not installed); a
/// server that is installed but fails to start throws.
std::shared_ptr<fenced_storage> open_postgres_storage(const postgres_storage_options& options,
                                                      std::string& why_not);

}  // namespace redlock::fault
