#include "runtime/TuningDatabase.h"

#include "dsl/Error.h"

#include <llvm/Support/Error.h>
#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/MemoryBuffer.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace coalesce {

namespace json = llvm::json;

namespace {

constexpr const char *kFormat = "coalesce-tuning-db";
constexpr int64_t kVersion = 1;

// The numeric and boolean knobs of a tiling as the file names them, each
// with whether a file may lack it (knobs added after the format's first
// files; a missing one keeps the tiling's default). Writing and reading
// both go through these lists; split_k_mode, a name, is mapped apart.
enum class Presence { Required, Optional };

template <class Tiling, class Visit> void for_each_knob_of_ffma(Tiling &t, Visit &&visit) {
  visit("block_m", t.block_m, Presence::Required);
  visit("block_n", t.block_n, Presence::Required);
  visit("threads_m", t.threads_m, Presence::Required);
  visit("threads_n", t.threads_n, Presence::Required);
  visit("k_step", t.k_step, Presence::Required);
  visit("stages", t.stages, Presence::Optional);
  visit("async_copy", t.async_copy, Presence::Required);
  visit("warp_rows", t.warp_rows, Presence::Optional);
  visit("warp_cols", t.warp_cols, Presence::Optional);
  visit("a_padding", t.a_padding, Presence::Required);
  visit("block_group_rows", t.block_group_rows, Presence::Required);
  visit("split_k", t.split_k, Presence::Required);
}

template <class Tiling, class Visit> void for_each_knob_of_mma(Tiling &t, Visit &&visit) {
  visit("block_m", t.block_m, Presence::Required);
  visit("block_n", t.block_n, Presence::Required);
  visit("warp_m", t.warp_m, Presence::Required);
  visit("warp_n", t.warp_n, Presence::Required);
  visit("swap_ab", t.swap_ab, Presence::Optional);
  visit("k_step", t.k_step, Presence::Required);
  visit("double_buffered", t.double_buffered, Presence::Required);
  visit("stages", t.stages, Presence::Required);
  visit("a_padding", t.a_padding, Presence::Required);
  visit("b_padding", t.b_padding, Presence::Required);
  visit("min_blocks_per_sm", t.min_blocks_per_sm, Presence::Required);
  visit("block_group_rows", t.block_group_rows, Presence::Required);
  visit("tma", t.tma, Presence::Optional);
  visit("producer_warps", t.producer_warps, Presence::Optional);
  visit("producer_registers", t.producer_registers, Presence::Optional);
  visit("persistent_blocks", t.persistent_blocks, Presence::Optional);
  visit("cluster_blocks", t.cluster_blocks, Presence::Optional);
  visit("split_k", t.split_k, Presence::Required);
}

// ------------------------------------------------------------------ writing

json::Value to_json(const GemmCandidate &c) {
  json::Object o{{"family", gemm_family_name(c.family)}};
  auto write = [&](llvm::StringLiteral name, const auto &value, Presence) { o[name] = value; };
  if (c.family == GemmFamily::Ffma)
    for_each_knob_of_ffma(c.ffma, write);
  else
    for_each_knob_of_mma(c.mma, write);
  o["split_k_mode"] = split_k_mode_name(c.family == GemmFamily::Ffma ? c.ffma.split_k_mode : c.mma.split_k_mode);
  if (c.family != GemmFamily::Ffma) {
    o["tile_stores"] = tile_stores_name(c.mma.tile_stores);
    o["consumer_schedule"] = consumer_schedule_name(c.mma.consumer_schedule);
    o["tma_padded_copies"] = padded_copies_name(c.mma.tma_padded_copies);
  }
  return o;
}

json::Value to_json(const TuningRecord &r) {
  const GemmProblem &p = r.problem;
  return json::Object{
      {"gpu", json::Object{{"name", r.gpu.name}, {"sm", r.gpu.sm}, {"sm_count", r.gpu.sm_count}}},
      {"problem", json::Object{{"dtype", p.dtype},
                               {"out_dtype", p.out_dtype},
                               {"epilogue", p.epilogue},
                               {"M", p.M},
                               {"N", p.N},
                               {"K", p.K},
                               {"b", b_layout_name(p.b_layout)},
                               {"shape_class", p.shape_class()}}},
      {"schedule", to_json(r.schedule)},
      {"ms", r.ms},
      {"default_ms", r.default_ms},
      {"candidates", json::Object{{"searched", r.searched}, {"legal", r.legal}, {"timed", r.timed}}},
  };
}

// ------------------------------------------------------------------ reading
// llvm::json's fromJSON convention: false with the error reported at the
// path, so the message says where (entries[2].schedule.block_m).

bool from_json(const json::Value &value, SplitKMode &mode, json::Path path) {
  std::optional<llvm::StringRef> text = value.getAsString();
  for (SplitKMode known : kSplitKModes)
    if (text && *text == split_k_mode_name(known)) {
      mode = known;
      return true;
    }
  path.report("expected \"deterministic\", \"atomic\" or \"combine-kernel\"");
  return false;
}

// The one of `values` whose name (`name(value)`) the string `v` holds, or
// nullptr (not a string, or no such name).
template <class Enum, size_t Count, class Name>
const Enum *named_value(const Enum (&values)[Count], Name name, const json::Value &v) {
  std::optional<llvm::StringRef> text = v.getAsString();
  const Enum *found =
      std::find_if(std::begin(values), std::end(values), [&](Enum value) { return text && *text == name(value); });
  return found == std::end(values) ? nullptr : found;
}

bool from_json(const json::Value &value, GemmCandidate &c, json::Path path) {
  json::ObjectMapper o(value, path);
  std::string family;
  if (!o || !o.map("family", family))
    return false;
  if (family == "ffma")
    c.family = GemmFamily::Ffma;
  else if (family == "warp")
    c.family = GemmFamily::WarpMma;
  else if (family == "warpgroup")
    c.family = GemmFamily::WarpgroupMma;
  else {
    path.field("family").report("expected \"ffma\", \"warp\" or \"warpgroup\"");
    return false;
  }
  const json::Object *object = value.getAsObject();
  auto mode = [&](SplitKMode &out) {
    const json::Value *v = object->get("split_k_mode");
    if (!v) {
      path.field("split_k_mode").report("missing value");
      return false;
    }
    return from_json(*v, out, path.field("split_k_mode"));
  };
  // The first knob that fails to map reports its path; the rest are skipped.
  bool ok = true;
  auto read = [&](llvm::StringLiteral name, auto &value, Presence presence) {
    ok = ok && (presence == Presence::Optional ? o.mapOptional(name, value) : o.map(name, value));
  };
  if (c.family == GemmFamily::Ffma) {
    for_each_knob_of_ffma(c.ffma, read);
    return ok && mode(c.ffma.split_k_mode);
  }
  for_each_knob_of_mma(c.mma, read);
  // Optional: entries written before it stored directly.
  c.mma.tile_stores = TileStores::Direct;
  if (const json::Value *v = object->get("tile_stores")) {
    const TileStores *named = named_value(kTileStores, tile_stores_name, *v);
    if (!named) {
      path.field("tile_stores").report("expected \"direct\", \"shared\" or \"sums\"");
      return false;
    }
    c.mma.tile_stores = *named;
  }
  // Optional: entries written before consumer schedules are Together.
  c.mma.consumer_schedule = ConsumerSchedule::Together;
  if (const json::Value *v = object->get("consumer_schedule")) {
    const ConsumerSchedule *named = named_value(kConsumerSchedules, consumer_schedule_name, *v);
    if (!named) {
      path.field("consumer_schedule").report("expected \"together\" or \"ping-pong\"");
      return false;
    }
    c.mma.consumer_schedule = *named;
  }
  // Optional: none where absent; entries written before A and B could be
  // copied apart hold a boolean (true: both).
  c.mma.tma_padded_copies = PaddedCopies::None;
  if (const json::Value *v = object->get("tma_padded_copies")) {
    const PaddedCopies *named = named_value(kPaddedCopies, padded_copies_name, *v);
    if (std::optional<bool> both = v->getAsBoolean())
      c.mma.tma_padded_copies = *both ? PaddedCopies::Both : PaddedCopies::None;
    else if (named)
      c.mma.tma_padded_copies = *named;
    else {
      path.field("tma_padded_copies").report("expected \"none\", \"a\", \"b\", \"both\" or \"where-ragged\"");
      return false;
    }
  }
  return ok && mode(c.mma.split_k_mode);
}

bool from_json(const json::Value &value, TuningRecord &r, json::Path path) {
  json::ObjectMapper o(value, path);
  if (!o)
    return false;
  const json::Object *object = value.getAsObject();
  auto section = [&](const char *name) -> const json::Value * {
    const json::Value *v = object->get(name);
    if (!v)
      path.field(name).report("missing value");
    return v;
  };
  const json::Value *gpu = section("gpu");
  const json::Value *problem = section("problem");
  const json::Value *schedule = section("schedule");
  if (!gpu || !problem || !schedule)
    return false;
  json::ObjectMapper g(*gpu, path.field("gpu"));
  if (!g || !g.map("name", r.gpu.name) || !g.map("sm", r.gpu.sm) || !g.map("sm_count", r.gpu.sm_count))
    return false;
  json::Path problem_path = path.field("problem");
  json::ObjectMapper p(*problem, problem_path);
  GemmProblem &q = r.problem;
  if (!p || !p.map("dtype", q.dtype) || !p.map("out_dtype", q.out_dtype) || !p.map("epilogue", q.epilogue) ||
      !p.map("M", q.M) || !p.map("N", q.N) || !p.map("K", q.K))
    return false;
  // Absent in files written before B could be stored N x K: K x N.
  std::optional<std::string> b_layout;
  if (!p.mapOptional("b", b_layout))
    return false;
  if (b_layout && *b_layout != "kn" && *b_layout != "nk") {
    problem_path.field("b").report("expected \"kn\" or \"nk\"");
    return false;
  }
  q.b_layout = b_layout && *b_layout == "nk" ? GemmBLayout::NK : GemmBLayout::KN;
  if (!from_json(*schedule, r.schedule, path.field("schedule")))
    return false;
  if (!o.map("ms", r.ms) || !o.mapOptional("default_ms", r.default_ms))
    return false;
  if (const json::Value *counts = object->get("candidates")) {
    json::ObjectMapper c(*counts, path.field("candidates"));
    if (!c || !c.mapOptional("searched", r.searched) || !c.mapOptional("legal", r.legal) ||
        !c.mapOptional("timed", r.timed))
      return false;
  }
  if (!(r.ms > 0) || !std::isfinite(r.ms)) {
    path.field("ms").report("expected a positive time in milliseconds");
    return false;
  }
  return true;
}

bool same_entry(const TuningRecord &a, const TuningRecord &b) {
  const GemmProblem &p = a.problem, &q = b.problem;
  return std::tie(a.gpu.name, a.gpu.sm, p.dtype, p.out_dtype, p.epilogue, p.b_layout, p.M, p.N, p.K) ==
         std::tie(b.gpu.name, b.gpu.sm, q.dtype, q.out_dtype, q.epilogue, q.b_layout, q.M, q.N, q.K);
}

bool same_kind(const GemmProblem &p, const GemmProblem &q) {
  return std::tie(p.dtype, p.out_dtype, p.epilogue, p.b_layout) == std::tie(q.dtype, q.out_dtype, q.epilogue, q.b_layout);
}

double log_distance(const GemmProblem &p, const GemmProblem &q) {
  auto d = [](int64_t a, int64_t b) {
    return std::fabs(std::log2(static_cast<double>(a)) - std::log2(static_cast<double>(b)));
  };
  return d(p.M, q.M) + d(p.N, q.N) + d(p.K, q.K);
}

[[noreturn]] void database_error(const std::string &name, const std::string &what) {
  user_error("tuning database ", name, ": ", what);
}

} // namespace

TuningDatabase TuningDatabase::parse(const std::string &text, const std::string &name) {
  llvm::Expected<json::Value> value = json::parse(text);
  if (!value)
    database_error(name, "not valid JSON (the file may be truncated or edited by hand): " +
                             llvm::toString(value.takeError()));
  const json::Object *root = value->getAsObject();
  if (!root)
    database_error(name, "expected a JSON object with \"format\": \"coalesce-tuning-db\"");
  std::optional<llvm::StringRef> format = root->getString("format");
  if (!format || *format != kFormat)
    database_error(name, "not a Coalesce tuning database (\"format\" is not \"coalesce-tuning-db\")");
  std::optional<int64_t> version = root->getInteger("version");
  if (!version || *version != kVersion)
    database_error(name, str_cat("unsupported \"version\" (this Coalesce reads version ", kVersion, ")"));
  const json::Array *entries = root->getArray("entries");
  if (!entries)
    database_error(name, "\"entries\" is missing or not an array");

  TuningDatabase db;
  json::Path::Root path_root("entries");
  for (size_t index = 0; index < entries->size(); ++index) {
    TuningRecord record;
    if (!from_json((*entries)[index], record, json::Path(path_root).index(static_cast<unsigned>(index)))) {
      database_error(name, "bad entry: " + llvm::toString(path_root.getError()));
    }
    try {
      record.problem.validate();
    } catch (const UserError &error) {
      database_error(name, str_cat("bad entry: entries[", index, "].problem: ", error.what()));
    }
    // The instruction follows from the dtype and the family (an FFMA
    // schedule for a tensor-core dtype, or warpgroup MMA for tf32, is refused).
    if (record.problem.tensor_cores() != (record.schedule.family != GemmFamily::Ffma))
      database_error(name, str_cat("bad entry: entries[", index, "].schedule.family: ",
                                   gemm_family_name(record.schedule.family), " does not run dtype ",
                                   record.problem.dtype));
    if (record.schedule.family != GemmFamily::Ffma) {
      try {
        record.schedule.mma.kind = gemm_mma_kind(record.problem, record.schedule.family);
      } catch (const UserError &error) {
        database_error(name, str_cat("bad entry: entries[", index, "].schedule.family: ", error.what()));
      }
    }
    for (const TuningRecord &seen : db.records_)
      if (same_entry(seen, record))
        database_error(name, str_cat("two entries for ", record.problem.str(), " on ", record.gpu.name, " (",
                                     record.gpu.sm, "); keep one"));
    db.records_.push_back(std::move(record));
  }
  return db;
}

TuningDatabase TuningDatabase::load(const std::string &path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file)
    database_error(path, "cannot read it: " + file.getError().message());
  return parse((*file)->getBuffer().str(), path);
}

TuningDatabase TuningDatabase::load_or_empty(const std::string &path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 && errno == ENOENT)
    return TuningDatabase();
  return load(path);
}

void TuningDatabase::merge(const TuningRecord &record) {
  for (TuningRecord &existing : records_)
    if (same_entry(existing, record)) {
      existing = record;
      return;
    }
  records_.push_back(record);
}

std::optional<TuningMatch> TuningDatabase::find(const GemmProblem &problem, const std::string &sm,
                                                const std::string &gpu_name) const {
  std::optional<TuningMatch> best;
  double best_distance = 0;
  for (const TuningRecord &r : records_) {
    if (r.gpu.sm != sm || (!gpu_name.empty() && r.gpu.name != gpu_name) || !same_kind(r.problem, problem))
      continue;
    bool exact = r.problem.M == problem.M && r.problem.N == problem.N && r.problem.K == problem.K;
    if (!exact && r.problem.shape_class() != problem.shape_class())
      continue;
    double distance = log_distance(r.problem, problem);
    // The exact shape wins; among the others the nearest, the first on a tie.
    if (!best || (exact && !best->exact) || (exact == best->exact && distance < best_distance)) {
      best = TuningMatch{&r, exact};
      best_distance = distance;
    }
  }
  return best;
}

std::string TuningDatabase::to_json() const {
  // A stable order, so that a re-tuned database diffs only where it changed.
  std::vector<const TuningRecord *> sorted;
  for (const TuningRecord &r : records_)
    sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(), [](const TuningRecord *a, const TuningRecord *b) {
    const GemmProblem &p = a->problem, &q = b->problem;
    return std::tie(a->gpu.sm, a->gpu.name, p.dtype, p.out_dtype, p.epilogue, p.b_layout, p.M, p.N, p.K) <
           std::tie(b->gpu.sm, b->gpu.name, q.dtype, q.out_dtype, q.epilogue, q.b_layout, q.M, q.N, q.K);
  });
  json::Array entries;
  for (const TuningRecord *r : sorted)
    entries.push_back(coalesce::to_json(*r));
  json::Value root = json::Object{{"format", kFormat}, {"version", kVersion}, {"entries", std::move(entries)}};
  return llvm::formatv("{0:2}", root).str() + "\n";
}

void TuningDatabase::save(const std::string &path) const {
  std::string text = to_json();
  // A unique temporary file beside the database (the rename then stays on
  // one file system), renamed over it: a reader never sees half a file.
  std::string temporary = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(temporary.data());
  if (fd < 0)
    database_error(path, std::string("cannot write it (creating ") + temporary + "): " + std::strerror(errno));
  size_t done = 0;
  bool ok = true;
  while (ok && done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    ok = n > 0;
    if (ok)
      done += static_cast<size_t>(n);
  }
  ok = ::fchmod(fd, 0644) == 0 && ok;
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(temporary.c_str());
    database_error(path, "cannot write it: " + why);
  }
}

void TuningDatabase::merge_into_file(const std::string &path, const TuningRecord &record) {
  std::string lock_path = path + ".lock";
  int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0)
    database_error(path, std::string("cannot lock it (opening ") + lock_path + "): " + std::strerror(errno));
  int locked;
  do
    locked = ::flock(lock, LOCK_EX);
  while (locked != 0 && errno == EINTR);
  if (locked != 0) {
    std::string why = std::strerror(errno);
    ::close(lock);
    database_error(path, "cannot lock it (" + lock_path + "): " + why);
  }
  try {
    TuningDatabase database = load_or_empty(path);
    database.merge(record);
    database.save(path);
  } catch (...) {
    ::close(lock); // closing releases the lock
    throw;
  }
  ::close(lock);
}

std::string tuning_fallback_note(const std::string &path, const GemmProblem &problem, const std::string &sm) {
  return str_cat("note: tuning database ", path, " has no entry for ", problem.str(), " (or its shape class ",
                 problem.shape_class(), ") on ", sm, "; using the default tiling");
}

} // namespace coalesce
