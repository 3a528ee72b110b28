// SPDX-License-Identifier: Apache-2.0
#include "help.hpp"

#include <iomanip>

namespace redlock::cli {

const char* const synopsis =
    "  redlock run     --name N [--name M ...] [--ttl 10s] [--wait 0s] [--kind K | --permits N | --shared | --exclusive]\n"
    "                  [--fenced] [--verbose] [--description W] [--max-hold D] [--on-lost term|kill|hook:CMD]\n"
    "                  [--grace 5s] [--metrics-port [HOST:]PORT] -- COMMAND [ARGS...]\n"
    "  redlock elect   --name N [--ttl 10s] [--wait 0s] [--verbose] [--description W] [--max-hold D]\n"
    "                  [--on-lost term|kill|hook:CMD] [--grace 5s] [--metrics-port [HOST:]PORT] -- COMMAND [ARGS...]\n"
    "  redlock acquire --name N [--name M ...] [--ttl 10s] [--wait 0s] [--kind K | --permits N | --shared | --exclusive]\n"
    "                  [--fenced] [--verbose] [--description W] [--json]\n"
    "  redlock extend  --name N [--name M ...] [--token T] [--ttl 10s] [--json]\n"
    "  redlock release --name N [--name M ...] [--token T] [--json]\n"
    "  redlock release --force --name N [--name M ...] [--kind K] [--json]\n"
    "  redlock status  --name N [--json]\n"
    "  redlock list    [--prefix P] [--max-names N] [--json]\n"
    "  redlock doctor  [--ttl 10s] [--node-timeout 50ms] [--acl-user U] [--json] [--verbose]\n";

const char* const connection_intro =
    "and, for every subcommand, how to reach the masters (defaults: $REDLOCK_NODES, $REDLOCK_TLS_CA, ...):";

const char* const connection_synopsis =
    "  [--nodes URI,...] [--tls-ca FILE] [--tls-cert FILE --tls-key FILE] [--user U] [--password-file FILE]\n"
    "  [--node-timeout 50ms] [--prefix P]\n";

const char* const durations_note = "durations take a unit: 500ms, 10s, 2m, 1h";

const std::vector<exit_status> exit_statuses = {
    {"0", "success (run, elect: COMMAND exited 0)"},
    {"64", "bad usage or input; a name held as another kind of lock than the one asked for"},
    {"65", "the lock's key (or a companion key it needs) holds someone else's data, not a lock"},
    {"69", "masters unusable: unreachable, authentication or TLS refused, error replies"},
    {"70", "run, elect: the lease was lost while COMMAND ran; COMMAND was ended"},
    {"75", "not acquired (held elsewhere, the wait ran out), no longer held, or a master timed out"},
    {"other", "run, elect: COMMAND's own status (128 + N: killed by signal N; 127: could not be run)"},
    {"doctor:", "0 nothing found, 1 warnings, 2 errors"},
};

void print_usage(std::ostream& os) {
  os << "usage: redlock SUBCOMMAND [options]   (redlock SUBCOMMAND --help: its options; redlock --version)\n\n"
     << synopsis << "\n"
     << connection_intro << "\n\n"
     << connection_synopsis << "\n"
     << durations_note << "\n\nexit status:\n";
  for (auto& e : exit_statuses) os << "   " << std::left << std::setw(5) << e.status << " " << e.meaning << "\n";
}

}  // namespace redlock::cli
