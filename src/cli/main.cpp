// SPDX-License-Identifier: Apache-2.0
// `redlock`: the RedLock from the shell (synopsis and exit statuses:
// help.cpp).
// Masters come from --nodes URI,... or REDLOCK_NODES; the CA and client
// certificate for rediss:// masters and the password for URIs without one
// from flags or REDLOCK_* variables (args.hpp). Exit statuses: lock_args.hpp.
// One file per subcommand (commands.hpp); this one only dispatches.
#include "commands.hpp"
#include "help.hpp"
#include "lock_args.hpp"

#include <redlock/version.hpp>

#include <iostream>

namespace redlock::cli {

const std::vector<subcommand> subcommands = {
    {"run", run},
    {"elect", elect},
    {"acquire", acquire},
    {"extend", [](const std::vector<std::string>& args) { return extend_or_release(args, true); }},
    {"release", [](const std::vector<std::string>& args) { return extend_or_release(args, false); }},
    {"status", status},
    {"list", list},
    {"doctor", doctor},
};

}  // namespace redlock::cli

using namespace redlock::cli;

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(std::cerr);
    return ex_usage;
  }
  std::string sub = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    for (auto& s : subcommands)
      if (sub == s.name) return s.run(args);
    if (sub == "--version" || sub == "version") {
      std::cout << "redlock " << redlock::version << "\n";
      return 0;
    }
    if (sub == "--help" || sub == "-h" || sub == "help") {
      print_usage(std::cout);
      return 0;
    }
    if (sub == "--man") {  // not in --help: the build makes redlock.1 with it
      print_man_page(std::cout);
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
