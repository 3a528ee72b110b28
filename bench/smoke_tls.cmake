# SPDX-License-Identifier: Apache-2.0
# bench_smoke_tls: redlock-bench --tls (local masters that speak only TLS),
# then checks from its JSON that it really ran over rediss:// and that the
# library's TLS path completed its work: every uncontended pair and the 64
# in flight without a failure, the floors measured over TLS as well (their
# raw OpenSSL links; scale_nodes' extra masters speak TLS too), and
# many_names reading a TLS master's INFO through the bench's own link. (A
# stopped TLS master is integration_tls's; contention over TLS is left to
# full runs: scripts/test stays under its time budget.)
# Usage: cmake -DBENCH=<redlock-bench> -DOUT=<json> -P smoke_tls.cmake
execute_process(COMMAND "${BENCH}" --smoke --tls
                        --scenario floor,uncontended,throughput,scale_nodes,many_names,alloc
                        --json "${OUT}"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "redlock-bench --tls exited with ${rc}")
endif()
file(READ "${OUT}" run)

function(expect what actual wanted)
  if(NOT "${actual}" STREQUAL "${wanted}")
    message(FATAL_ERROR "bench_smoke_tls: ${what} is '${actual}', expected '${wanted}'")
  endif()
endfunction()

string(JSON tls GET "${run}" config tls)
expect("config.tls" "${tls}" "ON")
string(JSON first_node GET "${run}" config nodes 0)
string(FIND "${first_node}" "rediss://" at)
expect("the first master's URI scheme (at)" "${at}" "0")
string(JSON failures GET "${run}" uncontended failures)
expect("uncontended.failures" "${failures}" "0")
string(JSON samples GET "${run}" uncontended samples)
if(samples LESS 1)
  message(FATAL_ERROR "bench_smoke_tls: no uncontended pair was measured")
endif()
string(JSON failures GET "${run}" throughput failures)
expect("throughput.failures" "${failures}" "0")
string(JSON floor_tls GET "${run}" floor tls)
expect("floor.tls" "${floor_tls}" "ON")
string(JSON floor_p50 GET "${run}" floor quorum_pair_us p50)
if(NOT floor_p50 GREATER 0)
  message(FATAL_ERROR "bench_smoke_tls: the quorum floor over TLS measured nothing (p50 ${floor_p50})")
endif()
# scale_nodes starts 4 masters beyond the 5: over TLS as well.
string(JSON rows LENGTH "${run}" scale_nodes by_masters)
math(EXPR last "${rows} - 1")
string(JSON most GET "${run}" scale_nodes by_masters ${last} masters)
string(JSON most_tls GET "${run}" scale_nodes by_masters ${last} tls_masters)
expect("scale_nodes: TLS masters of the ${most}" "${most_tls}" "${most}")
# many_names reads INFO memory through the bench's own raw link, over TLS
# too: it ran, and measured the master.
string(JSON failures GET "${run}" many_names failures)
expect("many_names.failures" "${failures}" "0")
string(JSON per_lock GET "${run}" many_names bytes_per_lock)
if(NOT per_lock GREATER 0)
  message(FATAL_ERROR "bench_smoke_tls: many_names read no memory from the TLS master (bytes_per_lock ${per_lock})")
endif()
message(STATUS "bench_smoke_tls: ${samples} uncontended pairs over TLS, none failed")
