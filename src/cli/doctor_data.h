// `doctor data` as a callable command (the CLI and its tests): walks and checks a tree, prints the summary
// and findings, writes the JSON report, the manifest and the fixed copies. Returns the exit code.
#pragma once

#include <string>

#include "doctor/data.h"

namespace edgedecode::cli {

struct DoctorDataCommand {
  doctor::DataOptions opt;
  std::string json_path;  // "" none, "-" stdout (the text then goes to stderr)
  std::string manifest_path, verify_path, out_dir;
  bool fix = false;
  bool progress = false;
};
int RunDoctorData(DoctorDataCommand cmd);

// An output (--out, --json, --manifest) must not overlap the input tree (either inside the other, after
// resolving symlinks); --out itself must not be a symlink. InvalidArgument naming both paths.
Status CheckOutsideTree(const std::string& what, const std::string& out, const std::string& root, bool is_dir);

}  // namespace edgedecode::cli
