// Parsing a profile's constraint objects with a clear error per wrong-typed key.
#include "scan/constraint.h"

#include <set>

namespace edgedecode::scan {

std::string JsonTypeName(const nlohmann::json& j) {
  if (j.is_number_integer()) return "integer";
  if (j.is_number()) return "number";
  return j.type_name();
}

namespace {

Status Wrong(const std::string& where, const std::string& key, const std::string& expected, const nlohmann::json& got) {
  return Corrupt(where + "." + key + ": expected " + expected + ", got " + JsonTypeName(got) +
                 (got.is_primitive() ? " " + got.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) : ""));
}

Result<int64_t> Int(const nlohmann::json& v, const std::string& where, const std::string& key, int64_t min) {
  if (!v.is_number_integer()) return Wrong(where, key, "an integer", v);
  int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX) ? -1 : v.get<int64_t>();
  if (x < min) return Corrupt(where + "." + key + ": " + v.dump() + " is below " + std::to_string(min));
  return x;
}

// An array whose every element passes `is` (described as `element` in the error), read as T.
template <typename T>
Result<std::vector<T>> ArrayOf(const nlohmann::json& v, const std::string& where, const std::string& key,
                               bool (nlohmann::json::*is)() const noexcept, const char* array, const char* element) {
  if (!v.is_array()) return Wrong(where, key, array, v);
  std::vector<T> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!(v[i].*is)()) return Wrong(where, key + "[" + std::to_string(i) + "]", element, v[i]);
    out.push_back(v[i].get<T>());
  }
  return out;
}

Result<std::vector<std::string>> Strings(const nlohmann::json& v, const std::string& where, const std::string& key) {
  return ArrayOf<std::string>(v, where, key, &nlohmann::json::is_string, "an array of strings", "a string");
}

Result<IntRange> Range(const nlohmann::json& v, const std::string& where, const std::string& key) {
  if (!v.is_array() || v.size() != 2 || !v[0].is_number_integer() || !v[1].is_number_integer())
    return Wrong(where, key, "[min, max] (two integers)", v);
  IntRange r{v[0].get<int64_t>(), v[1].get<int64_t>()};
  if (r.lo > r.hi) return Corrupt(where + "." + key + ": min " + std::to_string(r.lo) + " > max " + std::to_string(r.hi));
  return r;
}

Result<std::map<std::string, IntRange>> Ranges(const nlohmann::json& v, const std::string& where, const std::string& key,
                                               const std::set<std::string>* names) {
  if (!v.is_object()) return Wrong(where, key, "an object of [min, max] ranges", v);
  std::map<std::string, IntRange> out;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (names && !names->count(it.key()))
      return Corrupt(where + "." + key + ": unknown axis '" + it.key() + "' (batch, channel, height, width)");
    ED_ASSIGN_OR_RETURN(out[it.key()], Range(it.value(), where, key + "." + it.key()));
  }
  return out;
}

Result<std::map<std::string, std::vector<nlohmann::json>>> AllowedValues(const nlohmann::json& v, const std::string& where,
                                                                          const std::string& key) {
  if (!v.is_object()) return Wrong(where, key, "an object of attribute -> array of allowed values", v);
  std::map<std::string, std::vector<nlohmann::json>> out;
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string k = key + "." + it.key();
    if (!it.value().is_array()) return Wrong(where, k, "an array of strings or numbers", it.value());
    for (size_t i = 0; i < it.value().size(); ++i) {
      const auto& x = it.value()[i];
      if (!x.is_string() && !x.is_number()) return Wrong(where, k + "[" + std::to_string(i) + "]", "a string or a number", x);
      out[it.key()].push_back(x);
    }
  }
  return out;
}

Result<ValueRule> ParseValueRule(const nlohmann::json& v, const std::string& where, const std::string& key) {
  if (!v.is_object()) return Wrong(where, key, "an object of input index or attribute -> array of numbers (null: absent)", v);
  ValueRule rule;
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string k = key + "." + it.key();
    if (!it.value().is_array()) return Wrong(where, k, "an array of numbers or null", it.value());
    for (size_t i = 0; i < it.value().size(); ++i) {
      const auto& x = it.value()[i];
      if (x.is_null()) rule[it.key()].push_back(std::nullopt);
      else if (x.is_number()) rule[it.key()].push_back(x.get<double>());
      else return Wrong(where, k + "[" + std::to_string(i) + "]", "a number or null", x);
    }
  }
  return rule;
}

}  // namespace

Result<Constraint> ParseConstraint(const nlohmann::json& j, const std::string& where, bool allow_cases) {
  if (!j.is_object()) return Corrupt(where + ": expected a constraint object, got " + JsonTypeName(j));
  static const std::set<std::string> kAxes = {"batch", "channel", "height", "width"};
  static const std::set<std::string> kBroadcast = {"layer", "channel", "element", "other"};
  Constraint c;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    if (key == "dtypes") { ED_ASSIGN_OR_RETURN(c.dtypes, Strings(v, where, key)); }
    else if (key == "min_rank") { ED_ASSIGN_OR_RETURN(c.min_rank, Int(v, where, key, 0)); }
    else if (key == "max_rank") { ED_ASSIGN_OR_RETURN(c.max_rank, Int(v, where, key, 0)); }
    else if (key == "max_dim") { ED_ASSIGN_OR_RETURN(c.max_dim, Int(v, where, key, 0)); }
    else if (key == "max_batch") { ED_ASSIGN_OR_RETURN(c.max_batch, Int(v, where, key, 0)); }
    else if (key == "batch_axis") { ED_ASSIGN_OR_RETURN(c.batch_axis, Int(v, where, key, 0)); }
    else if (key == "max_spatial_size") { ED_ASSIGN_OR_RETURN(c.max_spatial_size, Int(v, where, key, 0)); }
    else if (key == "dim_limits") { ED_ASSIGN_OR_RETURN(c.dim_limits, Ranges(v, where, key, &kAxes)); }
    else if (key == "attr_range") { ED_ASSIGN_OR_RETURN(c.attr_range, Ranges(v, where, key, nullptr)); }
    else if (key == "attrs") { ED_ASSIGN_OR_RETURN(c.attrs, AllowedValues(v, where, key)); }
    else if (key == "static_shapes" || key == "not_supported" || key == "equal_spatial_scales") {
      if (!v.is_boolean()) return Wrong(where, key, "true or false", v);
      (key == "static_shapes" ? c.static_shapes : key == "not_supported" ? c.not_supported : c.equal_spatial_scales) = v.get<bool>();
    } else if (key == "notes") {
      if (!v.is_string()) return Wrong(where, key, "a string", v);
      c.notes = v.get<std::string>();
    } else if (key == "const_inputs") {
      if (!v.is_array()) return Wrong(where, key, "an array of input indices", v);
      std::vector<int64_t> idx;
      for (size_t i = 0; i < v.size(); ++i) { ED_ASSIGN_OR_RETURN(int64_t x, Int(v[i], where, key + "[" + std::to_string(i) + "]", 0)); idx.push_back(x); }
      c.const_inputs = idx;
    } else if (key == "input_values") {
      std::vector<ValueRule> alts;
      if (v.is_object()) { ED_ASSIGN_OR_RETURN(ValueRule r, ParseValueRule(v, where, key)); alts.push_back(r); }
      else if (v.is_array()) {
        for (size_t i = 0; i < v.size(); ++i) { ED_ASSIGN_OR_RETURN(ValueRule r, ParseValueRule(v[i], where, key + "[" + std::to_string(i) + "]")); alts.push_back(r); }
      } else return Wrong(where, key, "an object or an array of objects", v);
      c.input_values = alts;
    } else if (key == "scale_values") {
      ED_ASSIGN_OR_RETURN(c.scale_values, ArrayOf<double>(v, where, key, &nlohmann::json::is_number, "an array of numbers", "a number"));
    } else if (key == "scale_range") {
      if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number() || v[0].get<double>() > v[1].get<double>())
        return Wrong(where, key, "[min, max] (two numbers, min <= max)", v);
      c.scale_range = std::make_pair(v[0].get<double>(), v[1].get<double>());
    } else if (key == "broadcast") {
      ED_ASSIGN_OR_RETURN(auto kinds, Strings(v, where, key));
      for (const auto& k : kinds)
        if (!kBroadcast.count(k)) return Corrupt(where + ".broadcast: unknown rule '" + k + "' (layer, channel, element, other)");
      c.broadcast = kinds;
    } else if (key == "pad_axes") {
      ED_ASSIGN_OR_RETURN(c.pad_axes, ArrayOf<int64_t>(v, where, key, &nlohmann::json::is_number_integer, "an array of axis indices", "an integer"));
    } else if (key == "cases" && allow_cases) {
      if (!v.is_array()) return Wrong(where, key, "an array of {\"when\": {...}, constraint keys...}", v);
      std::vector<Case> cases;
      for (size_t i = 0; i < v.size(); ++i) {
        const std::string w = where + ".cases[" + std::to_string(i) + "]";
        if (!v[i].is_object() || !v[i].contains("when")) return Corrupt(w + ": expected an object with a \"when\" object");
        Case cs;
        ED_ASSIGN_OR_RETURN(cs.when, AllowedValues(v[i]["when"], w, "when"));
        nlohmann::json rest = v[i];
        rest.erase("when");
        ED_ASSIGN_OR_RETURN(Constraint then, ParseConstraint(rest, w, /*allow_cases=*/false));
        cs.then = std::make_shared<const Constraint>(std::move(then));
        cases.push_back(std::move(cs));
      }
      c.cases = std::move(cases);
    } else {
      return Corrupt(where + ": unknown constraint key '" + key + "' (docs/profiles.md lists the keys)");
    }
  }
  return c;
}

void Constraint::MergeFrom(const Constraint& o) {
  if (o.dim_limits && !o.max_dim) max_dim.reset();
#define ED_TAKE(field) if (o.field) field = o.field;
  ED_TAKE(dtypes) ED_TAKE(min_rank) ED_TAKE(max_rank) ED_TAKE(max_dim) ED_TAKE(max_batch) ED_TAKE(batch_axis)
  ED_TAKE(max_spatial_size) ED_TAKE(dim_limits) ED_TAKE(static_shapes) ED_TAKE(not_supported)
  ED_TAKE(equal_spatial_scales) ED_TAKE(attrs) ED_TAKE(attr_range) ED_TAKE(const_inputs) ED_TAKE(input_values)
  ED_TAKE(scale_values) ED_TAKE(scale_range) ED_TAKE(broadcast) ED_TAKE(pad_axes) ED_TAKE(cases) ED_TAKE(notes)
#undef ED_TAKE
}

}  // namespace edgedecode::scan
