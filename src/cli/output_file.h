// Output files that never cost the user an input: an output that is an input (the same file, a symlink or a
// hard link to it) is refused, and files are written under a temporary name in the target folder, then
// renamed, so a failed or interrupted write leaves no partial file under the output's name.
#pragma once

#include <string>
#include <vector>

#include "edgedecode/status.h"

namespace edgedecode::cli {

// InvalidArgument when `output` names the same file as one of `inputs` (same device and inode, after
// following symlinks); `what` names the option in the message ("-o", "--json", ...).
Status CheckOutputIsNotInput(const std::string& output, const std::vector<std::string>& inputs, const std::string& what);

// Writes data to path through a temporary file in the same folder and a rename.
Status WriteFileAtomically(const std::string& path, const std::string& data);

}  // namespace edgedecode::cli
