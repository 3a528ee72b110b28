// SPDX-License-Identifier: Apache-2.0
// The data-level verdict (Jepsen's lock + register, storage_register.hpp):
// decided from what the storage holds alone, never from the library's
// windows. Pure: it takes every log's entries, in the order the storage
// appended them, and every counter's final value.
//
// An entry is "K sid name cap sec usec" (storage time): K = B (a writer's
// section began: it read the counter), R (a reader's began), E (the writer
// wrote the counter back, inside its holder's window), Q (the reader ended
// inside its window), L (the end came after the holder's deadline: nothing
// written), A (abandoned by the holder: nothing written).
//
// A section that ended E or Q ran both its storage scripts inside the
// window its holder believed in, so that window covered the whole interval
// between them. Another section beginning inside that interval (its begin
// runs inside its own holder's window) is two holders' windows overlapping,
// found on the storage:
//   data-interleave   a section began while another on the same name (not
//                     two readers) was open and that one ended E or Q;
//   data-permits      a section began while `cap` others of its log (a
//                     semaphore's slots) were open and ended E;
//   data-lost-update  a counter is below the number of write-backs (E) of
//                     its name: an overlapping read-modify-write lost one;
//   data-corrupt      an entry that does not parse, an end without its
//                     begin, a counter above its write-backs.
// Overlaps with a section that ended L, A or never are not judged (that
// holder's window may have ended before the other began), only counted.
// Exposure: the ms (storage time) the overlapping sections shared.
#pragma once

#include "checkers.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace redlock::fault {

struct register_entry {
  char kind = '?';
  std::string sid, name;
  unsigned cap = 1;
  std::int64_t at_us = 0;  ///< storage time
};
std::optional<register_entry> parse_register_entry(const std::string& text);

struct data_figures {
  std::size_t sections = 0;  ///< sections judged: ended E (writes) or Q (reads)
  std::size_t writes = 0, reads = 0, late = 0, abandoned = 0, unfinished = 0;
  std::size_t lost_updates = 0;
  std::size_t overlaps = 0;           ///< judged overlaps (violations)
  double exposure_ms = 0;             ///< storage time those overlaps shared
  std::size_t unjudged_overlaps = 0;  ///< with a section that ended L, A or never
  std::size_t reads_shared = 0;       ///< reads begun while another read of the name was open
  std::size_t full = 0;               ///< sections begun with every other permit of their log in use
  std::size_t refused = 0;            ///< fenced storage: writes refused as stale, and absent from it
  void add(const data_figures& o);
};

/// `logs`: log key -> entries in storage order; `counters`: "reg:N" -> value.
std::vector<violation> check_data(const std::map<std::string, std::vector<std::string>>& logs,
                                  const std::map<std::string, long long>& counters, data_figures* figures = nullptr);

/// A counter every write-back added one to (`writes`: name -> their
/// number): below them, updates were lost (data-lost-update, counted in
/// `f`); above, a write the log does not show (data-corrupt).
void judge_counters(const std::map<std::string, long long>& counters, const std::map<std::string, std::size_t>& writes,
                    data_figures& f, std::vector<violation>& out);

// ---- a storage that fences itself (fenced_storage.hpp: PostgreSQL) ----------
// Each section's read-modify-write of its counter runs in one transaction
// that first fences the name with the holder's token; the transaction also
// appends the write to a table, so the table lists every committed write in
// commit order. A paused holder's section can overlap a newer one's: the
// fence, not the lock, must keep the data right. Judged from the table,
// the counters and what each client was told:
//   data-lost-update   a counter below its committed writes (judge_counters)
//   data-stale-write   a committed write whose token is below one committed
//                      before it on the same name
//   data-refused-kept  a write its client was told was refused (stale
//                      token) is in the table
//   data-lost-commit   a write its client was told was committed is not
//   data-corrupt       a counter above its committed writes, a section
//                      committed twice
struct fenced_write {
  std::string sid;
  std::uint64_t token = 0;
};
struct fenced_table {
  std::map<std::string, std::vector<fenced_write>> writes;  ///< name -> committed writes, in commit order
  std::map<std::string, long long> counters;                ///< name -> value
};
/// What a client was told of one of its writes: ok (committed), fail
/// (refused: a stale token), unknown (no answer, a dropped connection).
struct fenced_outcome {
  std::string name, sid;
  std::uint64_t token = 0;
  outcome result = outcome::unknown;
};
/// Figures: sections and writes = committed writes, refused, unfinished
/// (told nothing definite), lost_updates.
std::vector<violation> check_fenced_data(const fenced_table& table, const std::vector<fenced_outcome>& told,
                                         data_figures* figures = nullptr);

/// The id of client `client`'s section under acquisition `acquire_op`: "c<client>#<op>".
std::string section_id(int client, std::size_t acquire_op);
/// The acquisition a section id "c<client>#<op>" names (its op id), if any.
std::optional<std::size_t> section_acquire_op(const std::string& sid);

}  // namespace redlock::fault
