// SPDX-License-Identifier: Apache-2.0
// redlock::diagnose's judgements of the configuration and of the masters
// taken together (doctor.cpp audits each master alone): how many, whether
// two are one server, whether their clocks agree, the node timeout's share
// of the TTL.
#pragma once

#include <redlock/doctor.hpp>
#include <redlock/options.hpp>

namespace redlock::detail {

void check_node_count(const client_options& client, doctor_report& report);
void check_round_trip(const client_options& client, const doctor_options& options, doctor_report& report);
/// Needs every node's run_id (the audits fill them in).
void check_same_servers(doctor_report& report);
/// Needs every node's clock offset (the audits fill them in).
void check_clock_skew(const client_options& client, const doctor_options& options, doctor_report& report);

}  // namespace redlock::detail
