// SPDX-License-Identifier: Apache-2.0
// `redlock`: the RedLock from the shell (synopsis and exit statuses:
// print_usage below).
// Masters come from --nodes URI,... or REDLOCK_NODES; the CA and client
// certificate for rediss:// masters and the password for URIs without one
// from flags or REDLOCK_* variables (args.hpp). Exit statuses: lock_args.hpp.
// One file per subcommand (commands.hpp); this one only dispatches.
#include "commands.hpp"
#include "lock_args.hpp"

#include <redlock/version.hpp>

#include <iostream>

namespace {

using namespace redlock::cli;

// The synopsis is also in docs/user-guide.md (the CLI section), line for
// line: the test cli_synopsis_matches_the_user_guide compares them.
void print_usage(std::ostream& os) {
  os << "usage: redlock SUBCOMMAND [options]   (redlock SUBCOMMAND --help: its options; redlock --version)\n"
        "\n"
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
        "  redlock doctor  [--ttl 10s] [--node-timeout 50ms] [--acl-user U] [--json] [--verbose]\n"
        "\n"
        "and, for every subcommand, how to reach the masters (defaults: $REDLOCK_NODES, $REDLOCK_TLS_CA, ...):\n"
        "\n"
        "  [--nodes URI,...] [--tls-ca FILE] [--tls-cert FILE --tls-key FILE] [--user U] [--password-file FILE]\n"
        "  [--node-timeout 50ms] [--prefix P]\n"
        "\n"
        "durations take a unit: 500ms, 10s, 2m, 1h\n"
        "\n"
        "exit status:\n"
        "   0     success (run, elect: COMMAND exited 0)\n"
        "   64    bad usage or input; a name held as another kind of lock than the one asked for\n"
        "   65    the lock's key holds someone else's data, not a lock\n"
        "   69    masters unusable: unreachable, authentication or TLS refused, error replies\n"
        "   70    run, elect: the lease was lost while COMMAND ran; COMMAND was ended\n"
        "   75    not acquired (held elsewhere, the wait ran out), no longer held, or a master timed out\n"
        "   other run, elect: COMMAND's own status (128 + N: killed by signal N; 127: could not be run)\n"
        "   doctor: 0 nothing found, 1 warnings, 2 errors\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(std::cerr);
    return ex_usage;
  }
  std::string sub = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (sub == "run") return run(args);
    if (sub == "elect") return elect(args);
    if (sub == "acquire") return acquire(args);
    if (sub == "extend") return extend_or_release(args, true);
    if (sub == "release") return extend_or_release(args, false);
    if (sub == "status") return status(args);
    if (sub == "list") return list(args);
    if (sub == "doctor") return doctor(args);
    if (sub == "--version" || sub == "version") {
      std::cout << "redlock " << redlock::version << "\n";
      return 0;
    }
    if (sub == "--help" || sub == "-h" || sub == "help") {
      print_usage(std::cout);
      return 0;
    }
    usage("unknown subcommand '" + sub + "'");
  } catch (const help_shown&) {
    return 0;
  } catch (const already_reported& e) {
    return e.status;
  } catch (const usage_error& e) {
    std::cerr << "redlock: " << e.what() << "\n";
    return ex_usage;
  } catch (const redlock::error& e) {
    std::cerr << "redlock: " << e.what() << "\n";
    return exit_code_for(e.code());
  } catch (const std::exception& e) {
    std::cerr << "redlock: " << e.what() << "\n";
    return ex_unavailable;
  }
}
