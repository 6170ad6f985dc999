#include "doctor/finding.h"

#include <iterator>
#include <ostream>

namespace edgedecode::doctor {
namespace {

struct Row {
  FindingCode code;
  const char* name;
  const char* text;
};

constexpr Row kRows[] = {
#define EDGEDECODE_DOCTOR_X(e, name, text) {FindingCode::e, name, text},
    EDGEDECODE_DOCTOR_FINDING_CODES(EDGEDECODE_DOCTOR_X)
#undef EDGEDECODE_DOCTOR_X
};

constexpr bool InEnumOrder() {
  for (size_t i = 0; i < std::size(kRows); ++i)
    if (static_cast<size_t>(kRows[i].code) != i) return false;
  return true;
}
static_assert(InEnumOrder(), "kRows is indexed by FindingCode");

const Row* Find(FindingCode c) {
  const auto i = static_cast<size_t>(c);
  return i < std::size(kRows) ? &kRows[i] : nullptr;
}

}  // namespace

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kError: return "error";
  }
  return "error";
}

const char* FindingCodeName(FindingCode c) {
  const Row* r = Find(c);
  return r ? r->name : "unknown";
}

const char* FindingCodeText(FindingCode c) {
  const Row* r = Find(c);
  return r ? r->text : "";
}

std::vector<FindingCode> AllFindingCodes() {
  std::vector<FindingCode> v;
  v.reserve(std::size(kRows));
  for (const Row& r : kRows) v.push_back(r.code);
  return v;
}

std::ostream& operator<<(std::ostream& os, FindingCode c) { return os << FindingCodeName(c); }

}  // namespace edgedecode::doctor
