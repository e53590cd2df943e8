#pragma once
// The tuning database: the best schedule found for each (GPU, problem), in
// a JSON file (written with LLVM's JSON support) that people can read and
// diff:
//
//   {
//     "format": "coalesce-tuning-db",
//     "version": 1,
//     "entries": [
//       {
//         "gpu": {"name": "NVIDIA H200", "sm": "sm_90a", "sm_count": 132},
//         "problem": {"dtype": "bf16", "out_dtype": "bf16", "epilogue": "bias_gelu",
//                     "M": 4096, "N": 4096, "K": 4096, "b": "kn", "shape_class": "~4096x~4096x~4096"},
//         "schedule": {"family": "warpgroup", "block_m": 128, ...},
//         "ms": 0.61, "default_ms": 0.65,
//         "candidates": {"searched": 412, "legal": 301, "timed": 50}
//       }
//     ]
//   }
//
// One entry per (GPU name, sm, dtype, out_dtype, epilogue, B's layout, exact
// shape); "b" is "kn" (B stored K x N) or "nk" (N x K), "kn" where absent.
// A lookup takes the exact shape, else the nearest shape of the same class
// (GemmProblem::shape_class). Saving writes a temporary file and renames it
// over the database, so a reader sees the old file or the new one, whole.
// A file that is not valid JSON, or not a database, is an error naming the
// file and what is wrong, never ignored.

#include "runtime/GemmCandidate.h"
#include "runtime/TuningProblem.h"

#include <optional>
#include <string>
#include <vector>

namespace coalesce {

struct TuningRecord {
  GpuIdentity gpu;
  GemmProblem problem;
  GemmCandidate schedule;
  double ms = 0;         ///< the schedule's time (the benchmark's protocol)
  double default_ms = 0; ///< the default schedule's quick timing (0: unknown)
  int searched = 0, legal = 0, timed = 0;
};

/// What a lookup found: the record, and whether its shape is the problem's
/// own (else one of its class).
struct TuningMatch {
  const TuningRecord *record = nullptr;
  bool exact = false;
};

class TuningDatabase {
public:
  /// Reads `path`; a UserError naming the file when it cannot be read, is
  /// not valid JSON, or is not a tuning database (and where, e.g.
  /// entries[2].schedule.block_m).
  static TuningDatabase load(const std::string &path);
  /// The same, but a file that does not exist is an empty database.
  static TuningDatabase load_or_empty(const std::string &path);
  /// Parses `text`; `name` is the file named in errors.
  static TuningDatabase parse(const std::string &text, const std::string &name);

  /// Adds `record`, replacing the entry for the same GPU and problem (same
  /// exact shape); every other entry is kept.
  void merge(const TuningRecord &record);
  /// The best entry for `problem` on a GPU with target `sm` (and, when
  /// `gpu_name` is not empty, that name): the exact shape first, else the
  /// nearest shape (log distance) of the same class.
  std::optional<TuningMatch> find(const GemmProblem &problem, const std::string &sm,
                                  const std::string &gpu_name = "") const;

  /// The file's text (pretty-printed JSON, entries in a stable order).
  std::string to_json() const;
  /// Writes to_json() to `path` atomically (temporary file, then rename).
  void save(const std::string &path) const;
  /// Merges `record` into the database at `path` (created if missing):
  /// under an exclusive lock on `path`.lock, reads what is there now,
  /// merges and saves, so that tuning runs that finish at the same time,
  /// in any processes, keep each other's entries.
  static void merge_into_file(const std::string &path, const TuningRecord &record);

  const std::vector<TuningRecord> &records() const { return records_; }

private:
  std::vector<TuningRecord> records_;
};

/// A message for the tools when the database has no entry: which problem,
/// and that the default tiling is used.
std::string tuning_fallback_note(const std::string &path, const GemmProblem &problem, const std::string &sm);

} // namespace coalesce
