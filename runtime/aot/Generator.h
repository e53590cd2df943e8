#pragma once
// Generators: a named, parameterised recipe for one output Func (algorithm
// and schedule) that the ahead-of-time tool compiles to PTX plus a launcher.
// Halide's generators are the model. A user's file is the whole of it:
//
//   class Scale : public coalesce::Generator {
//   public:
//     coalesce::SizeParam n{this, "N", "elements"};
//     coalesce::GeneratorParam<int> block{this, "block", 256, "threads per block", 32, 1024};
//     coalesce::Func build() override {
//       coalesce::Input x("x", coalesce::Float(32), {n});
//       ... define out, schedule it with block ...
//       return out;
//     }
//   };
//   COALESCE_REGISTER_GENERATOR(Scale, "scale", "out = 2 x");
//
// Linked with the coalesce_aot_main library it is a complete tool: each
// parameter is a flag (--block=128, --N=4096), --help lists them, and the tool
// writes NAME.ptx, NAME.h and NAME.cpp (runtime/aot/aot_main.cpp).

#include "codegen/GpuTarget.h"
#include "dsl/Func.h"

#include <climits>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace coalesce {

class Generator;

/// One parameter of a generator, set on the command line as --name=value.
/// Declare it as a member of the generator, passing `this`.
class GeneratorParamBase {
public:
  GeneratorParamBase(const GeneratorParamBase &) = delete;
  GeneratorParamBase &operator=(const GeneratorParamBase &) = delete;
  virtual ~GeneratorParamBase() = default;

  const std::string &name() const { return name_; }
  const std::string &help() const { return help_; }
  /// The values it accepts, for --help: "int in [1, 16]", "true|false", ...
  virtual std::string value_description() const = 0;
  /// What it is when the flag is omitted, for --help.
  virtual std::string default_text() const = 0;
  /// The current value as the flag would spell it ("" for an unset size).
  virtual std::string value_text() const = 0;
  /// Sets the value from a flag's text; a malformed or out-of-range value
  /// is a UserError that names the flag and says what is accepted.
  virtual void set_from_string(const std::string &text) = 0;
  /// True if the flag may stand alone (a bool: --bias means --bias=true).
  virtual bool value_optional() const { return false; }
  /// True once the flag has set it.
  bool is_set() const { return is_set_; }

protected:
  GeneratorParamBase(Generator *owner, std::string name, std::string help);
  /// Throws the UserError for a bad value: "--name=text: expected".
  [[noreturn]] void bad_value(const std::string &text, const std::string &expected) const;
  bool is_set_ = false;

private:
  std::string name_, help_;
};

/// A parameter of type T: int, bool or std::string.
template <typename T> class GeneratorParam;

/// An integer, optionally limited to [min, max].
template <> class GeneratorParam<int> : public GeneratorParamBase {
public:
  GeneratorParam(Generator *owner, std::string name, int default_value, std::string help,
                 int min = INT_MIN, int max = INT_MAX);
  int value() const { return value_; }
  operator int() const { return value_; } // NOLINT: reads like the int it is

  std::string value_description() const override;
  std::string default_text() const override { return std::to_string(default_); }
  std::string value_text() const override { return std::to_string(value_); }
  void set_from_string(const std::string &text) override;

private:
  int value_, default_, min_, max_;
};

/// true or false (also accepted: 1/0, yes/no, on/off; alone, the flag means true).
template <> class GeneratorParam<bool> : public GeneratorParamBase {
public:
  GeneratorParam(Generator *owner, std::string name, bool default_value, std::string help);
  bool value() const { return value_; }
  operator bool() const { return value_; } // NOLINT

  std::string value_description() const override { return "true|false"; }
  std::string default_text() const override { return default_ ? "true" : "false"; }
  std::string value_text() const override { return value_ ? "true" : "false"; }
  void set_from_string(const std::string &text) override;
  bool value_optional() const override { return true; }

private:
  bool value_, default_;
};

/// Free text (a name, a label); any value is accepted.
template <> class GeneratorParam<std::string> : public GeneratorParamBase {
public:
  GeneratorParam(Generator *owner, std::string name, std::string default_value, std::string help);
  const std::string &value() const { return value_; }
  operator const std::string &() const { return value_; } // NOLINT

  std::string value_description() const override { return "string"; }
  std::string default_text() const override { return default_; }
  std::string value_text() const override { return value_; }
  void set_from_string(const std::string &text) override;

private:
  std::string value_, default_;
};

/// One of a fixed set of named choices, each standing for a value of E:
///   EnumParam<Act> act{this, "activation", Act::Relu,
///                      {{"none", Act::None}, {"relu", Act::Relu}}, "the epilogue"};
template <typename E> class EnumParam : public GeneratorParamBase {
public:
  EnumParam(Generator *owner, std::string name, E default_value,
            std::vector<std::pair<std::string, E>> choices, std::string help)
      : GeneratorParamBase(owner, std::move(name), std::move(help)), value_(default_value),
        default_(default_value), choices_(std::move(choices)) {}
  E value() const { return value_; }
  operator E() const { return value_; } // NOLINT

  std::string value_description() const override { return join_names("|"); }
  std::string default_text() const override { return name_of(default_); }
  std::string value_text() const override { return name_of(value_); }
  void set_from_string(const std::string &text) override {
    for (const auto &[choice, value] : choices_)
      if (choice == text) {
        value_ = value;
        is_set_ = true;
        return;
      }
    bad_value(text, "expected one of " + join_names(", "));
  }

private:
  std::string name_of(E value) const {
    for (const auto &[choice, candidate] : choices_)
      if (candidate == value)
        return choice;
    return "?";
  }
  std::string join_names(const char *separator) const {
    std::string names;
    for (const auto &choice : choices_)
      names += (names.empty() ? "" : separator) + choice.first;
    return names;
  }
  E value_, default_;
  std::vector<std::pair<std::string, E>> choices_;
};

/// A size of the problem (a buffer extent). Given on the command line
/// (--N=4096) it is a constant in the generated code, and the launcher
/// rejects any other value; omitted, it is a run-time argument of the
/// launcher (a Param of the same name in the algorithm). Either way the
/// launcher takes it, so its signature does not depend on the choice.
class SizeParam : public GeneratorParamBase {
public:
  SizeParam(Generator *owner, std::string name, std::string help);
  bool fixed() const { return is_set_; }
  /// The fixed value (only if fixed()).
  int value() const;
  /// The constant if fixed, else Param(name()).
  Expr expr() const;
  operator Expr() const { return expr(); } // NOLINT: used in extents and RDoms

  std::string value_description() const override { return "int in [1, 2^30]"; }
  std::string default_text() const override { return "passed at run time"; }
  std::string value_text() const override { return is_set_ ? std::to_string(value_) : ""; }
  void set_from_string(const std::string &text) override;

private:
  int value_ = 0;
};

/// A recipe for one output Func. Subclass it, declare parameters as members
/// (each constructed with `this`), and build the algorithm and its schedule
/// in build(). Register it with COALESCE_REGISTER_GENERATOR.
class Generator {
public:
  Generator() = default;
  Generator(const Generator &) = delete;
  Generator &operator=(const Generator &) = delete;
  virtual ~Generator() = default;

  /// The output Func, defined and scheduled from the parameters' values.
  /// A bad combination of values is a UserError.
  virtual Func build() = 0;

  /// The GPU the tool compiles for (--target), set before build(): a
  /// generator sizes its schedule for it (GpuTarget::sm_count), and one that
  /// reads a tuning database looks its entries up by it.
  const GpuTarget &target() const { return target_; }
  void set_target(const GpuTarget &target) { target_ = target; }

  /// Every parameter, in declaration order.
  const std::vector<GeneratorParamBase *> &params() const { return params_; }
  /// The size parameters, in declaration order: the launcher takes them in
  /// this order, after the buffers.
  std::vector<const SizeParam *> sizes() const;
  /// The launcher's input buffers, first these (by name, in this order),
  /// then any others in the pipeline's order (by name); asked after
  /// build(). Empty (the default): the pipeline's order.
  virtual std::vector<std::string> input_order() const { return {}; }
  /// Whether `param` matters to what build() makes with the values the
  /// flags set (a flag of another form of the generator may not): the
  /// command line that regenerates the output, in its header, leaves out
  /// those that do not, so that it never gives a flag the form refuses.
  virtual bool uses_param(const GeneratorParamBase &param) const {
    (void)param;
    return true;
  }
  /// The parameter called `name`, or nullptr.
  GeneratorParamBase *find_param(const std::string &name) const;

private:
  friend class GeneratorParamBase;
  void add_param(GeneratorParamBase *param);
  std::vector<GeneratorParamBase *> params_;
  GpuTarget target_;
};

/// A registered generator: its name (the --generator value), a one-line
/// description, and a factory.
struct GeneratorEntry {
  std::string name;
  std::string description;
  std::function<std::unique_ptr<Generator>()> create;
};

/// Adds a generator; COALESCE_REGISTER_GENERATOR calls it during static
/// initialisation. A name registered twice is reported by
/// generator_registry_problems().
void register_generator(GeneratorEntry entry);
/// Every registered generator, by name.
const std::map<std::string, GeneratorEntry> &registered_generators();
/// Problems seen while registering (a name used twice), "" if none.
std::string generator_registry_problems();
/// A new instance of the generator `name`; an unknown name is a UserError
/// that lists the registered ones.
std::unique_ptr<Generator> create_generator(const std::string &name);

/// Registers G under `name` when constructed (see the macro below).
template <typename G> struct GeneratorRegistration {
  GeneratorRegistration(const char *name, const char *description) {
    register_generator({name, description, [] { return std::unique_ptr<Generator>(new G()); }});
  }
};

} // namespace coalesce

/// Registers generator class `GeneratorClass` as `name` (a string literal)
/// with a one-line `description`. Use once per generator, at namespace scope.
#define COALESCE_REGISTER_GENERATOR(GeneratorClass, name, description)                            \
  static ::coalesce::GeneratorRegistration<GeneratorClass> COALESCE_GENERATOR_CONCAT(             \
      coalesce_generator_registration_, __LINE__)(name, description)
#define COALESCE_GENERATOR_CONCAT(a, b) COALESCE_GENERATOR_CONCAT_(a, b)
#define COALESCE_GENERATOR_CONCAT_(a, b) a##b
