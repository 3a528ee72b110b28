// SPDX-License-Identifier: Apache-2.0
#include "args.hpp"

#include "duration.hpp"

#include <boost/program_options/parsers.hpp>
#include <boost/program_options/positional_options.hpp>

#include <cstdlib>
#include <iostream>

namespace redlock::cli {

void usage(const std::string& why) { throw usage_error(why); }

namespace po = boost::program_options;

po::variables_map parse(const std::vector<std::string>& args, po::options_description& d,
                        std::vector<std::string>* command) {
  po::variables_map vm;
  po::positional_options_description pos;
  po::options_description all;  // `d` plus the hidden positional COMMAND
  all.add(d);
  if (command) {
    all.add_options()("command", po::value<std::vector<std::string>>(), "");
    pos.add("command", -1);
  }
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    usage(e.what());
  }
  if (vm.count("help")) {
    std::cout << d;
    throw help_shown{};
  }
  if (command && vm.count("command")) *command = vm["command"].as<std::vector<std::string>>();
  return vm;
}

std::chrono::milliseconds duration_arg(const boost::program_options::variables_map& vm, const char* name,
                                       std::chrono::milliseconds dflt) {
  if (!vm.count(name)) return dflt;
  auto text = vm[name].as<std::string>();
  auto d = parse_duration(text);
  if (!d) usage("--" + std::string(name) + " '" + text + "' is not a duration (e.g. 500ms, 10s, 2m)");
  return *d;
}

}  // namespace redlock::cli
