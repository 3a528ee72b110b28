// SPDX-License-Identifier: Apache-2.0
// How every `redlock` subcommand reaches the masters: their URIs, TLS files
// and the password for URIs without one, each from a flag or a REDLOCK_*
// variable. (Apart from args.hpp, which the bench and the demo share
// without the library.)
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>

#include <redlock/options.hpp>

#include <string>
#include <vector>

namespace redlock::cli {

/// How every subcommand reaches the masters: --nodes, --tls-ca, --tls-cert,
/// --tls-key, --user, --password-file (each with its $REDLOCK_* default).
void add_connection_options(boost::program_options::options_description& d);
/// Reads them into `client`: the masters from --nodes URI,... or else
/// $REDLOCK_NODES; the CA, client certificate and key from the flags or
/// $REDLOCK_TLS_CA, $REDLOCK_TLS_CERT, $REDLOCK_TLS_KEY; the password for
/// URIs without one from --password-file (its first line) or else
/// $REDLOCK_PASSWORD, and its user from --user or $REDLOCK_USER, so that no
/// secret need be in argv (visible in `ps`). Usage error when there is no
/// master or the password file cannot be read.
void read_connection(const boost::program_options::variables_map& vm, redlock::client_options& client);

/// The node URIs given with --nodes that carry a password, as shown (without
/// it): on the command line, any user of the machine can read them.
std::vector<std::string> passwords_in_argv(const boost::program_options::variables_map& vm);

}  // namespace redlock::cli
