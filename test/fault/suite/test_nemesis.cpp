// SPDX-License-Identifier: Apache-2.0
// The seeded nemesis over every safe fault type (docs/safety.md assumptions
// hold): M clients x K resources under random faults, then every checker.
// Any violation fails the test and prints the seed and the command that
// reproduces the round.
//
// Arguments (after Boost.Test's "--"), or the environment variables in
// brackets:
//   --seed S      first seed (REDLOCK_FAULT_SEED, default 1); round i uses S+i
//   --seeds A,B,C instead: exactly these seeds, one round each (regressions)
//   --rounds R    number of rounds (REDLOCK_FAULT_ROUNDS, default 1)
//   --seconds T   length of each round (REDLOCK_FAULT_SECONDS, default 30)
//   --minutes M   instead of --rounds: run rounds (of T seconds, default 60)
//                 until M minutes have passed (REDLOCK_FAULT_MINUTES)
//   --semaphore   every resource a semaphore (semaphore_round: 2 or 3
//                 permits by seed), judged also by check (j), at most that
//                 many holders at once (REDLOCK_FAULT_SEMAPHORE=1: so
//                 scripts/soak can run it)
//   --read-write  read-write locks (read_write_round: 70% reads), judged by
//                 (a) with reads sharing, writes excluding all, and (b) on the
//                 writers' tokens (REDLOCK_FAULT_READ_WRITE=1)
//   --together    mutexes over 2 or 3 names of a pool of 5 (together_round),
//                 every name judged as a lock of its own with its own token
//                 (REDLOCK_FAULT_TOGETHER=1)
//   --election    campaigners for 2 election names (election_round): no two
//                 leaders at once (a), epochs increasing (k)
//                 (REDLOCK_FAULT_ELECTION=1)
//   --fair        fair locks (fair_round), judged also by (n): no
//                 overtaking once queued (REDLOCK_FAULT_FAIR=1)
//   --reentrant   reentrant locks whose sections re-enter their hold
//                 (reentrant_round; REDLOCK_FAULT_REENTRANT=1)
//   --postgres    each section a read-modify-write in a PostgreSQL
//                 transaction fenced with the holder's token
//                 (postgres_round), judged also from the table
//                 (check_fenced_data); says "SKIPPED" when there is no
//                 PostgreSQL to start (REDLOCK_FAULT_POSTGRES=1)
//   --extra-rounds K
//                 while the totals are short of a floor below, run up to K
//                 more rounds (new seeds; with --sum-figures, mixed rounds
//                 added to the sum): a slow machine takes longer, the
//                 floors stay where they are
//   --write-figures FILE
//                 also write the totals to FILE (tally::write)
//   --sum-figures DIR --parts N
//                 run nothing: sum the figures every run wrote into DIR
//                 and judge the floors below on the sum; when fewer than N
//                 runs wrote theirs, say "fault_floors: SKIPPED"
//   --expect-acquisitions A, --expect-sections D, --expect-faults F,
//   --expect-renewals R, --expect-extends E, --expect-full S,
//   --expect-reads-shared X, --expect-fifo P, --expect-failovers L,
//   --expect-reentries T, --expect-refused W
//                 fail unless the totals reach these: acquisitions checked,
//                 sections judged from the storage, faults that acted,
//                 renewals and extends made while a fault acted on the
//                 holder's masters, semaphore windows begun full, reads
//                 begun while another read was held, fair pairs whose order
//                 was judged, leadership passed between clients, re-entries,
//                 stale writes the fenced storage refused (and does not hold)
//                 (the floors of an optimized build; scripts/test runs one)
// At exit it prints the figures by fault type and the summary line
//   fault suite: H histories, A acquisitions checked, D data-checked sections, F faults injected, V violations
#define BOOST_TEST_MODULE fault_nemesis
#include <boost/test/unit_test.hpp>

#include "nemesis.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using namespace redlock::fault;

namespace {

tally totals;

struct summary_at_exit {
  void setup() {}
  void teardown() {
    if (totals.histories > 0) totals.print(std::cout);
  }
};

struct arguments {
  std::uint64_t seed = 1;
  std::vector<std::uint64_t> seeds;  ///< --seeds: these, in order, instead of seed + i
  std::size_t rounds = 1;
  std::optional<double> seconds;
  std::optional<double> minutes;
  std::size_t expect_acquisitions = 0, expect_faults = 0, expect_sections = 0, expect_renewals = 0,
              expect_extends = 0, expect_full = 0, expect_reads_shared = 0, expect_fifo = 0, expect_failovers = 0,
              expect_reentries = 0, expect_refused = 0;
  bool semaphore = false, read_write = false, together = false, election = false, fair = false, reentrant = false,
       postgres = false;
  std::string write_figures, sum_figures;
  std::size_t parts = 0;
  std::size_t extra_rounds = 0;  ///< --extra-rounds: at most this many more rounds while short of a floor
  std::string argv0;
  /// The variant's flag, for the reproduce line.
  std::string flag() const {
    return semaphore    ? "--semaphore "
           : read_write ? "--read-write "
           : together   ? "--together "
           : election   ? "--election "
           : fair       ? "--fair "
           : reentrant  ? "--reentrant "
           : postgres   ? "--postgres "
                        : "";
  }
};

arguments parse() {
  arguments a;
  auto env = [](const char* n) -> std::optional<std::string> {
    if (const char* v = std::getenv(n); v && *v) return std::string(v);
    return std::nullopt;
  };
  if (auto v = env("REDLOCK_FAULT_SEED")) a.seed = std::stoull(*v);
  if (auto v = env("REDLOCK_FAULT_ROUNDS")) a.rounds = std::stoul(*v);
  if (auto v = env("REDLOCK_FAULT_SECONDS")) a.seconds = std::stod(*v);
  if (auto v = env("REDLOCK_FAULT_MINUTES")) a.minutes = std::stod(*v);
  if (auto v = env("REDLOCK_FAULT_SEMAPHORE")) a.semaphore = *v != "0";
  if (auto v = env("REDLOCK_FAULT_READ_WRITE")) a.read_write = *v != "0";
  if (auto v = env("REDLOCK_FAULT_TOGETHER")) a.together = *v != "0";
  if (auto v = env("REDLOCK_FAULT_ELECTION")) a.election = *v != "0";
  if (auto v = env("REDLOCK_FAULT_FAIR")) a.fair = *v != "0";
  if (auto v = env("REDLOCK_FAULT_REENTRANT")) a.reentrant = *v != "0";
  if (auto v = env("REDLOCK_FAULT_POSTGRES")) a.postgres = *v != "0";
  auto& suite = boost::unit_test::framework::master_test_suite();
  a.argv0 = suite.argc > 0 ? suite.argv[0] : "fault_nemesis";
  for (int i = 1; i < suite.argc; ++i) {
    std::string k = suite.argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= suite.argc) throw std::invalid_argument("missing value after " + k);
      return suite.argv[++i];
    };
    if (k == "--seed") a.seed = std::stoull(value());
    else if (k == "--seeds") {
      std::istringstream list(value());
      for (std::string one; std::getline(list, one, ',');) a.seeds.push_back(std::stoull(one));
      a.rounds = a.seeds.size();
    }
    else if (k == "--rounds") a.rounds = std::stoul(value());
    else if (k == "--seconds") a.seconds = std::stod(value());
    else if (k == "--minutes") a.minutes = std::stod(value());
    else if (k == "--expect-acquisitions") a.expect_acquisitions = std::stoul(value());
    else if (k == "--expect-faults") a.expect_faults = std::stoul(value());
    else if (k == "--expect-sections") a.expect_sections = std::stoul(value());
    else if (k == "--expect-renewals") a.expect_renewals = std::stoul(value());
    else if (k == "--expect-extends") a.expect_extends = std::stoul(value());
    else if (k == "--expect-full") a.expect_full = std::stoul(value());
    else if (k == "--expect-reads-shared") a.expect_reads_shared = std::stoul(value());
    else if (k == "--expect-fifo") a.expect_fifo = std::stoul(value());
    else if (k == "--expect-failovers") a.expect_failovers = std::stoul(value());
    else if (k == "--expect-reentries") a.expect_reentries = std::stoul(value());
    else if (k == "--expect-refused") a.expect_refused = std::stoul(value());
    else if (k == "--extra-rounds") a.extra_rounds = std::stoul(value());
    else if (k == "--write-figures") a.write_figures = value();
    else if (k == "--sum-figures") a.sum_figures = value();
    else if (k == "--parts") a.parts = std::stoul(value());
    else if (k == "--fair") a.fair = true;
    else if (k == "--reentrant") a.reentrant = true;
    else if (k == "--semaphore") a.semaphore = true;
    else if (k == "--read-write") a.read_write = true;
    else if (k == "--together") a.together = true;
    else if (k == "--election") a.election = true;
    else if (k == "--postgres") a.postgres = true;
    else throw std::invalid_argument("unknown argument " + k);
  }
  if (a.semaphore + a.read_write + a.together + a.election + a.fair + a.reentrant + a.postgres > 1)
    throw std::invalid_argument(
        "at most one of --semaphore, --read-write, --together, --election, --fair, --reentrant, --postgres");
  return a;
}

std::string describe(const round_config& c) {
  std::ostringstream os;
  static constexpr const char* kinds[] = {"mutex", "reentrant", "fair", "semaphore", "read", "write"};
  if (c.workload.election)
    os << "election";
  else if (c.workload.kind == redlock::lock_kind::read || c.workload.kind == redlock::lock_kind::write)
    os << "read-write (" << static_cast<int>(c.workload.read_p * 100) << "% reads)";
  else
    os << kinds[static_cast<int>(c.workload.kind)];
  if (c.workload.together_max >= 2) os << " over 2.." << c.workload.together_max << " names together";
  if (c.workload.permits > 0) os << " (" << c.workload.permits << " permits)";
  if (c.workload.io_threads > 1) os << " on " << c.workload.io_threads << " io threads";
  if (c.workload.odd_clients_queue_timeout)
    os << " (queue timeouts " << c.workload.queue_timeout.count() << " and "
       << c.workload.odd_clients_queue_timeout->count() << " ms)";
  os << (c.workload.fenced ? " fenced" : " unfenced") << ", N=" << c.cluster.masters << (c.cluster.aof ? " AOF(always)" : "") << (c.cluster.proxies ? " proxied" : "")
     << (c.cluster.clock_shim ? " clock-shim" : "") << ", " << c.workload.clients << " clients x "
     << c.workload.resources << " resources, ttl " << c.workload.ttl_min.count() << ".."
     << c.workload.ttl_max.count() << " ms, node timeout " << c.workload.node_timeout.count() << " ms, "
     << c.nemesis.types.size() << " fault types, " << c.duration.count() / 1000.0 << " s";
  if (c.workload.storage) os << ", each section a read-modify-write on " << c.workload.storage->describe();
  return os.str();
}

}  // namespace

BOOST_TEST_GLOBAL_FIXTURE(summary_at_exit);

namespace {

// The floors of the options that `t` does not reach, as messages.
std::vector<std::string> floors_unmet(const tally& t, const arguments& args) {
  std::vector<std::string> out;
  auto floor = [&](std::size_t got, std::size_t want, const char* what) {
    if (got < want) out.push_back("only " + std::to_string(got) + " " + what + ", expected " + std::to_string(want));
  };
  floor(t.acquisitions, args.expect_acquisitions, "acquisitions checked");
  floor(t.faults, args.expect_faults, "faults seen to act");
  floor(t.data.sections, args.expect_sections, "sections judged from the storage");
  floor(t.renewals_under_faults, args.expect_renewals, "renewals while a fault acted");
  floor(t.extends_under_faults, args.expect_extends, "extends while a fault acted");
  floor(t.semaphore_full, args.expect_full, "semaphore windows begun full");
  floor(t.reads_shared, args.expect_reads_shared, "reads shared");
  floor(t.fifo_pairs, args.expect_fifo, "fair pairs judged");
  floor(t.failovers, args.expect_failovers, "failovers");
  floor(t.reentries, args.expect_reentries, "re-entries");
  floor(t.data.refused, args.expect_refused, "stale writes refused by the fenced storage");
  return out;
}

void judge_floors(const tally& t, const arguments& args) {
  for (auto& unmet : floors_unmet(t, args)) BOOST_TEST(false, unmet);
}

// The round of the variant asked for.
round_config round_of(const arguments& args, std::uint64_t seed, std::chrono::milliseconds length) {
  if (args.postgres) {
    std::string why_not;
    auto storage = open_postgres_storage({}, why_not);  // a fresh database each round
    if (!storage) throw std::runtime_error("no PostgreSQL: " + why_not);
    return postgres_round(seed, length, std::move(storage));
  }
  return args.semaphore    ? semaphore_round(seed, length)
         : args.read_write ? read_write_round(seed, length)
         : args.together   ? together_round(seed, length)
         : args.election   ? election_round(seed, length)
         : args.fair       ? fair_round(seed, length)
         : args.reentrant  ? reentrant_round(seed, length)
                           : safe_round(seed, length);
}

// Runs one round, adds it to `into`, and fails the test on any violation.
void run_judged(const arguments& args, round_config cfg, std::uint64_t seed, double seconds, tally& into) {
  std::cout << "round seed " << seed << ": " << describe(cfg) << std::endl;
  auto r = run_round(cfg);
  into.add(r);
  std::cout << "round seed " << seed << ": " << r.report.acquisitions << " acquisitions (" << r.report.attempts
            << " attempts), " << r.faults_injected << " faults, " << r.report.writes_rejected
            << " stale writes rejected, " << r.report.recovery_periods << " recoveries judged, " << r.violations()
            << " violations, " << r.seconds << " s; longest";
  for (auto& [k, v] : r.report.max_ms) std::cout << " " << k << " " << v << " ms";
  std::cout << std::endl;
  if (r.violations() > 0) {
    std::ostringstream cmd;
    cmd << args.argv0 << " --run_test=nemesis_safe -- " << args.flag() << "--seed " << seed << " --rounds 1 --seconds "
        << seconds;
    report_failure(std::cout, r, cmd.str());
  }
  BOOST_TEST(r.violations() == 0u, "seed " << seed << ": " << r.violations() << " violations");
}

}  // namespace

BOOST_AUTO_TEST_CASE(nemesis_safe) {
  auto args = parse();
  if (!args.sum_figures.empty()) {  // fault_floors: the whole run's figures
    tally sum;
    std::size_t found = 0;
    std::error_code ec;
    for (auto& f : std::filesystem::directory_iterator(args.sum_figures, ec)) {
      std::ifstream in(f.path());
      sum.read(in);
      ++found;
    }
    if (found < args.parts) {
      std::cout << "fault_floors: SKIPPED (" << found << " of " << args.parts << " nemesis runs wrote figures)"
                << std::endl;
      return;
    }
    // Short of the whole run's floors (a slower machine): more mixed
    // rounds here, each judged like any other, until they are reached or
    // --extra-rounds ran.
    for (std::size_t extra = 0; extra < args.extra_rounds && !floors_unmet(sum, args).empty(); ++extra) {
      for (auto& unmet : floors_unmet(sum, args)) std::cout << "the whole run is short (" << unmet << "): one more round" << std::endl;
      auto seed = args.seed + 2000 + extra;
      double seconds = args.seconds.value_or(18.0);
      run_judged(args, safe_round(seed, std::chrono::milliseconds(static_cast<long long>(seconds * 1000))), seed,
                 seconds, sum);
    }
    std::cout << "the whole run (" << found << " nemesis tests):" << std::endl;
    sum.print(std::cout);
    BOOST_TEST(sum.violations == 0u);
    judge_floors(sum, args);
    return;
  }
  auto write_figures = [&] {
    if (args.write_figures.empty()) return;
    std::filesystem::create_directories(std::filesystem::path(args.write_figures).parent_path());
    std::ofstream out(args.write_figures);
    totals.write(out);
  };
  if (args.postgres) {
    std::string why_not;
    if (!open_postgres_storage({}, why_not)) {
      std::cout << "fault_nemesis --postgres: SKIPPED (" << why_not << ")" << std::endl;
      write_figures();  // an empty part: fault_floors still sums the others
      return;
    }
  }
  auto start = steady::now();
  std::optional<steady::time_point> until;
  if (args.minutes)
    until = start + std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(*args.minutes * 60));
  double per_round = args.seconds.value_or(args.minutes ? 60.0 : 30.0);

  for (std::size_t i = 0;; ++i) {
    double seconds = per_round;
    if (until) {
      double left = std::chrono::duration<double>(*until - steady::now()).count();
      if (left < 12.0 && i > 0) break;
      seconds = std::max(12.0, std::min(per_round, left - 6.0));  // ~6 s of set-up and checks per round
    } else if (i >= args.rounds) {
      break;
    }
    auto seed = i < args.seeds.size() ? args.seeds[i] : args.seed + i;
    auto length = std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
    run_judged(args, round_of(args, seed, length), seed, seconds, totals);
  }
  // A machine slower than the floors were set on (a loaded CI host) gives
  // fewer sections in the same seconds: more rounds, with new seeds, until
  // the floors are reached or --extra-rounds ran; the floors never drop.
  for (std::size_t extra = 0; extra < args.extra_rounds && !floors_unmet(totals, args).empty(); ++extra) {
    auto seed = args.seed + 1000 + extra;
    for (auto& unmet : floors_unmet(totals, args)) std::cout << "short of a floor (" << unmet << "): one more round" << std::endl;
    run_judged(args, round_of(args, seed, std::chrono::milliseconds(static_cast<long long>(per_round * 1000))), seed,
               per_round, totals);
  }
  judge_floors(totals, args);
  write_figures();
}
