// SPDX-License-Identifier: Apache-2.0
// `redlock`: the RedLock from the shell.
//   redlock run     --name N [--ttl 10s] [--wait 0s] [--kind K] [--fenced] -- COMMAND [ARGS...]
//   redlock elect   --name N [--ttl 10s] [--wait 0s] -- COMMAND [ARGS...]
//   redlock acquire --name N [--name M...] [--ttl 10s] [--wait 0s] [--kind K | --permits N | --shared |
//                   --exclusive] [--fenced] [--json]
//   redlock extend  --name N [--name M...] --token T [--ttl 10s] [--json]
//   redlock release --name N [--name M...] --token T
//   redlock status  --name N [--json]
//   redlock doctor  [--ttl 10s] [--json]
//   redlock --version
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

void print_usage(std::ostream& os) {
  os << "usage: redlock <run|elect|acquire|extend|release|status|doctor> [options]   (redlock SUBCOMMAND --help for all "
        "options; redlock --version)\n"
        "  redlock run --name N [--ttl 10s] [--wait 0s] [--kind mutex|reentrant|fair] [--fenced] -- COMMAND [ARGS...]\n"
        "  redlock elect --name N [--ttl 10s] [--wait 0s: until leader] -- COMMAND [ARGS...]   (REDLOCK_FENCE = epoch)\n"
        "  redlock acquire --name N [--ttl 10s] [--wait 0s] [--kind K | --permits N | --shared | --exclusive] [--fenced] "
        "[--json]\n"
        "  redlock extend --name N --token T [--ttl 10s] [--json]   (the hold that token names, of any kind)\n"
        "  redlock release --name N --token T                       (--name again for each name of a set)\n"
        "  redlock status --name N [--json]\n"
        "  redlock doctor [--ttl 10s] [--acl-user U] [--json]   (audits the masters: 0 ok, 1 warnings, 2 errors)\n"
        "common: --nodes redis://host:port,... (or REDLOCK_NODES), --tls-ca FILE (or REDLOCK_TLS_CA),\n"
        "        --tls-cert FILE --tls-key FILE (or REDLOCK_TLS_CERT, REDLOCK_TLS_KEY: a client certificate),\n"
        "        --password-file FILE (or REDLOCK_PASSWORD), --user U (or REDLOCK_USER): for URIs without a password,\n"
        "        --node-timeout 50ms, --prefix P, --json;\n"
        "run: --grace 5s (SIGTERM to SIGKILL after a lost lease), --metrics-port [HOST:]PORT (Prometheus);\n"
        "durations take units (500ms, 10s, 2m)\n";
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
