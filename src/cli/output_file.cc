#include "cli/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/temp_path.h"

namespace edgedecode::cli {

Status CheckOutputIsNotInput(const std::string& output, const std::vector<std::string>& inputs, const std::string& what) {
  struct stat out_st;
  if (::stat(output.c_str(), &out_st) != 0) return Status::Ok();  // does not exist yet (or a dangling link)
  for (const std::string& in : inputs) {
    struct stat in_st;
    if (in.empty() || ::stat(in.c_str(), &in_st) != 0) continue;
    if (in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino)
      return InvalidArgument(what + " " + output + " is the input " + in +
                             (output == in ? "" : " (the same file under another name or link)") +
                             ": name another output; inputs are never overwritten");
  }
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, const std::string& data) {
  const std::string tmp = TempPathFor(path);
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return IoError(path + ": cannot create " + tmp + ": " + std::strerror(errno));
  const bool written = std::fwrite(data.data(), 1, data.size(), f) == data.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    std::remove(tmp.c_str());
    return IoError(path + ": write failed: " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return IoError(path + ": cannot rename " + tmp + " to it: " + std::strerror(err));
  }
  return Status::Ok();
}

}  // namespace edgedecode::cli
