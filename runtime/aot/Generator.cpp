#include "runtime/aot/Generator.h"

#include "dsl/Error.h"
#include "dsl/Var.h"

#include <cerrno>
#include <cstdlib>
#include <optional>

namespace coalesce {

namespace {

/// The whole of `text` as an int, or nothing (empty, trailing junk, overflow).
std::optional<int> parse_int(const std::string &text) {
  if (text.empty())
    return std::nullopt;
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || value < INT_MIN || value > INT_MAX)
    return std::nullopt;
  return static_cast<int>(value);
}

struct Registry {
  std::map<std::string, GeneratorEntry> entries;
  std::string problems;
};

Registry &registry() {
  static Registry instance; // constructed on first use, whatever the static-init order
  return instance;
}

} // namespace

GeneratorParamBase::GeneratorParamBase(Generator *owner, std::string name, std::string help)
    : name_(std::move(name)), help_(std::move(help)) {
  COALESCE_INTERNAL_ASSERT(owner != nullptr, "a generator parameter needs its generator");
  owner->add_param(this);
}

void GeneratorParamBase::bad_value(const std::string &text, const std::string &expected) const {
  user_error("--", name_, "=", text, ": ", expected);
}

GeneratorParam<int>::GeneratorParam(Generator *owner, std::string name, int default_value,
                                    std::string help, int min, int max)
    : GeneratorParamBase(owner, std::move(name), std::move(help)), value_(default_value),
      default_(default_value), min_(min), max_(max) {}

std::string GeneratorParam<int>::value_description() const {
  if (min_ == INT_MIN && max_ == INT_MAX)
    return "int";
  return "int in [" + std::to_string(min_) + ", " + std::to_string(max_) + "]";
}

void GeneratorParam<int>::set_from_string(const std::string &text) {
  std::optional<int> value = parse_int(text);
  if (!value)
    bad_value(text, "not an integer");
  if (*value < min_ || *value > max_)
    bad_value(text, "out of range: expected an " + value_description());
  value_ = *value;
  is_set_ = true;
}

GeneratorParam<bool>::GeneratorParam(Generator *owner, std::string name, bool default_value,
                                     std::string help)
    : GeneratorParamBase(owner, std::move(name), std::move(help)), value_(default_value),
      default_(default_value) {}

void GeneratorParam<bool>::set_from_string(const std::string &text) {
  if (text.empty() || text == "true" || text == "1" || text == "yes" || text == "on")
    value_ = true;
  else if (text == "false" || text == "0" || text == "no" || text == "off")
    value_ = false;
  else
    bad_value(text, "expected true or false");
  is_set_ = true;
}

GeneratorParam<std::string>::GeneratorParam(Generator *owner, std::string name,
                                            std::string default_value, std::string help)
    : GeneratorParamBase(owner, std::move(name), std::move(help)), value_(default_value),
      default_(std::move(default_value)) {}

void GeneratorParam<std::string>::set_from_string(const std::string &text) {
  value_ = text;
  is_set_ = true;
}

SizeParam::SizeParam(Generator *owner, std::string name, std::string help)
    : GeneratorParamBase(owner, std::move(name), std::move(help)) {}

int SizeParam::value() const {
  COALESCE_INTERNAL_ASSERT(fixed(), "size '", name(), "' is not fixed");
  return value_;
}

Expr SizeParam::expr() const { return fixed() ? Expr(value_) : Expr(Param(name())); }

void SizeParam::set_from_string(const std::string &text) {
  std::optional<int> value = parse_int(text);
  std::string hint = "; omit --" + name() + " to pass " + name() + " to the launcher at run time";
  if (!value)
    bad_value(text, "not an integer: a size is a positive integer" + hint);
  if (*value <= 0)
    bad_value(text, "a size must be positive" + hint);
  if (*value > (1 << 30))
    bad_value(text, "a size is at most 2^30 = 1073741824 (the kernels compute in 32 bits)");
  value_ = *value;
  is_set_ = true;
}

std::vector<const SizeParam *> Generator::sizes() const {
  std::vector<const SizeParam *> sizes;
  for (const GeneratorParamBase *param : params_)
    if (const auto *size = dynamic_cast<const SizeParam *>(param))
      sizes.push_back(size);
  return sizes;
}

GeneratorParamBase *Generator::find_param(const std::string &name) const {
  for (GeneratorParamBase *param : params_)
    if (param->name() == name)
      return param;
  return nullptr;
}

void Generator::add_param(GeneratorParamBase *param) {
  if (find_param(param->name()))
    user_error("generator parameter '", param->name(), "' is declared twice");
  params_.push_back(param);
}

void register_generator(GeneratorEntry entry) {
  Registry &r = registry();
  if (r.entries.count(entry.name)) {
    r.problems += "generator '" + entry.name + "' is registered twice\n";
    return;
  }
  std::string name = entry.name;
  r.entries.emplace(std::move(name), std::move(entry));
}

const std::map<std::string, GeneratorEntry> &registered_generators() { return registry().entries; }

std::string generator_registry_problems() { return registry().problems; }

std::unique_ptr<Generator> create_generator(const std::string &name) {
  const auto &entries = registered_generators();
  auto it = entries.find(name);
  if (it == entries.end()) {
    std::string known;
    for (const auto &entry : entries)
      known += (known.empty() ? "" : ", ") + entry.first;
    user_error("--generator=", name, ": no such generator; this tool has: ",
               known.empty() ? "none" : known);
  }
  return it->second.create();
}

} // namespace coalesce
