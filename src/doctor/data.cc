#include "doctor/data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "doctor/hash.h"
#include "doctor/jpeg_fix.h"
#include "doctor/sniff.h"

namespace edgedecode::doctor {
namespace fs = std::filesystem;

size_t DataReport::FilesWithFindings() const {
  size_t n = 0;
  for (const auto& f : files)
    for (const auto& x : f.findings)
      if (x.severity != Severity::kInfo) { ++n; break; }
  return n;
}

namespace {

// Up to `want` bytes from the start of fd (fewer if the file shrank since fstat).
bool ReadFd(int fd, uint64_t want, std::vector<uint8_t>* out) {
  out->resize(want);
  uint64_t got = 0;
  while (got < want) {
    const ssize_t r = ::pread(fd, out->data() + got, want - got, static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    if (r == 0) break;
    got += static_cast<uint64_t>(r);
  }
  out->resize(got);
  return true;
}

// The whole of a regular file of at most `limit` bytes.
bool ReadAll(const std::string& path, std::vector<uint8_t>* out, uint64_t limit = kMaxImageReadBytes) {
  uint64_t size = 0;
  std::string why;
  const int fd = OpenRegularFile(path, &size, &why);
  if (fd < 0) return false;
  const bool ok = size <= limit && ReadFd(fd, size, out);
  ::close(fd);
  return ok;
}

std::string Renamed(const std::string& path, const char* ext) {
  size_t slash = path.find_last_of('/');
  size_t dot = path.find_last_of('.');
  std::string stem = (dot == std::string::npos || (slash != std::string::npos && dot < slash)) ? path : path.substr(0, dot);
  return stem + "." + ext;
}

Finding Note(FindingCode code, Severity sev, std::string msg) {
  Finding f;
  f.code = code;
  f.severity = sev;
  f.message = std::move(msg);
  return f;
}

// What --fix needs of a text conversion: the UTF-8 (only when it differs from the input) and the
// counts its log reports.
void KeepConversion(const DataOptions& opt, Conversion* conv, FileReport* r) {
  r->bad_sequences = conv->BadCount();
  r->repaired_lines.clear();
  for (const auto& l : conv->repaired) r->repaired_lines.push_back(l.line);
  const bool changed = r->text.encoding != "UTF-8" || r->text.bom_bytes || conv->BadCount() || !conv->repaired.empty();
  if (opt.keep_text && changed) r->utf8 = std::move(conv->utf8);
}

bool IsTextFormat(Format f) {
  return f == Format::kText || f == Format::kJson || f == Format::kXml || f == Format::kHtml;
}

// A file over the read limit: sniffed from its head, hashed streaming, and never read whole.
void CheckLarge(int fd, const std::string& abs, FileReport* r, const DataOptions& opt, std::vector<uint8_t>* buf) {
  if (!ReadFd(fd, 4096, buf)) {
    r->findings.push_back(Note(FindingCode::kUnreadable, Severity::kError, std::string("read error: ") + std::strerror(errno)));
    return;
  }
  r->content = SniffContent(buf->data(), buf->size(), r->size);
  r->by_extension = FormatFromExtension(r->path);
  if (opt.hash) {
    auto h = Sha256File(abs);
    if (h.ok()) r->sha256 = h.value();
    else r->findings.push_back(Note(FindingCode::kUnreadable, Severity::kError, h.status().message()));
  }
  const bool image = IsImageFormat(r->content) || IsImageFormat(r->by_extension);
  const bool text = IsTextFormat(r->content) || r->by_extension == Format::kText ||
                    r->by_extension == Format::kJson || r->by_extension == Format::kXml;
  if (!image && !text) return;  // not a format doctor checks: the hash is all there is to do
  r->is_image = image;
  const uint64_t limit = image ? kMaxImageReadBytes : kMaxTextReadBytes;
  r->findings.push_back(Note(FindingCode::kTooLarge, Severity::kWarning,
                             std::to_string(r->size) + " bytes of " + FormatName(image && IsImageFormat(r->content) ? r->content : r->by_extension) +
                                 ", over the limit of " + std::to_string(limit) + " bytes read whole for a " +
                                 (image ? "decode" : "text check") + ": not checked" + (opt.hash ? " (hashed)" : "")));
}

// Everything about one file that does not need its neighbours.
void CheckOne(const std::string& abs, FileReport* r, const DataOptions& opt, std::vector<uint8_t>* buf) {
  uint64_t size = 0;
  std::string why;
  const int fd = OpenRegularFile(abs, &size, &why);
  if (fd < 0) {
    r->findings.push_back(Note(FindingCode::kUnreadable, Severity::kError, why));
    return;
  }
  r->size = size;
  // Text is checked up to the lower limit; images up to the higher one (the sniff decides which).
  const Format ext = FormatFromExtension(r->path);
  const bool text_ext = ext == Format::kText || ext == Format::kJson || ext == Format::kXml;
  if (size > kMaxImageReadBytes || (size > kMaxTextReadBytes && text_ext)) {
    CheckLarge(fd, abs, r, opt, buf);
    ::close(fd);
    return;
  }
  const bool read_ok = ReadFd(fd, size, buf);
  const int read_errno = errno;
  ::close(fd);
  if (!read_ok) {
    r->findings.push_back(Note(FindingCode::kUnreadable, Severity::kError, std::string("read error: ") + std::strerror(read_errno)));
    return;
  }
  const uint8_t* d = buf->data();
  const size_t n = buf->size();
  r->size = n;
  if (opt.hash) r->sha256 = Sha256Hex(d, n);
  r->content = SniffContent(d, std::min<size_t>(n, 4096), n);
  r->by_extension = ext;
  const bool ext_image = IsImageFormat(r->by_extension);
  if (r->content == Format::kEmpty) {
    if (ext_image || r->by_extension != Format::kUnknown)
      r->findings.push_back(Note(FindingCode::kEmpty, Severity::kError, "file is empty (0 bytes)"));
    r->is_image = ext_image;
    return;
  }
  const bool pnm_like = r->by_extension == Format::kPnm && n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '7';
  if (!ExtensionMatches(r->by_extension, r->content) && r->content != Format::kUnknown && !pnm_like) {
    Finding f = Note(FindingCode::kExtensionMismatch, Severity::kError,
                     "named ." + Extension(r->path) + " but the content is " + FormatName(r->content));
    f.fix = "rename to " + Renamed(r->path, FormatExtension(r->content));
    f.offset = 0;
    r->findings.push_back(std::move(f));
  }
  Format decode_as = Format::kUnknown;
  if (IsImageFormat(r->content)) decode_as = r->content;
  else if (ext_image && r->content == Format::kUnknown) decode_as = r->by_extension;  // damaged signature
  else if (r->by_extension == Format::kPnm && n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '7')
    decode_as = Format::kPnm;  // "P6" glued to its width: a broken header, not text
  if (decode_as != Format::kUnknown) {
    r->is_image = true;
    ImageCheck c = CheckImage(decode_as, d, n);
    r->image = c.info;
    if (r->content == Format::kUnknown) {
      // The extension's decoder is the only one that could apply; its failure is the finding.
      if (c.findings.empty())
        c.findings.push_back(Note(FindingCode::kCorrupt, Severity::kError, "signature not recognised, yet decodes as " + std::string(FormatName(decode_as))));
    }
    for (auto& f : c.findings) r->findings.push_back(std::move(f));
    // Always, not only for images with known dimensions: a format the target cannot decode at all is
    // the same finding whether or not this build has a decoder for it (HEIF) or could read its size.
    if (opt.hw) {
      for (auto& f : CheckAgainstHw(r->image, *opt.hw)) r->findings.push_back(std::move(f));
    }
    return;
  }
  if (ext_image) {
    // HTML / JSON / text saved under an image name.
    r->is_image = true;
    r->image.format = r->content;
    Finding f = Note(FindingCode::kNotAnImage, Severity::kError,
                     std::string("content is ") + FormatName(r->content) + ", not an image (a saved error page or API reply?)");
    f.offset = 0;
    r->findings.push_back(std::move(f));
    return;
  }
  const bool textish = IsTextFormat(r->content);
  if ((textish || text_ext) && n > kMaxTextReadBytes) {  // text content under a name that is not text's
    r->findings.push_back(Note(FindingCode::kTooLarge, Severity::kWarning,
                               std::to_string(n) + " bytes of text, over the limit of " +
                                   std::to_string(kMaxTextReadBytes) + " bytes of a text check: not checked"));
    return;
  }
  if (textish || text_ext) {
    r->is_text = true;
    r->text = DetectEncoding(d, n);
    if (r->text.how == "undecidable") return;  // decided after the folder vote
    Conversion conv;
    for (auto& f : TextFindings(d, n, r->text, &conv)) r->findings.push_back(std::move(f));
    KeepConversion(opt, &conv, r);
  }
}

std::string Parent(const std::string& rel) {
  size_t s = rel.find_last_of('/');
  return s == std::string::npos ? "" : rel.substr(0, s);
}

// Short files the detector cannot judge take the majority encoding of their folder, if that
// encoding decodes them cleanly; otherwise they stay undecidable.
void VoteAndFinish(const DataOptions& opt, DataReport* rep) {
  std::map<std::string, std::map<std::string, int>> votes;  // folder -> encoding -> files
  for (const auto& f : rep->files)
    if (f.is_text && f.text.how == "uchardet") votes[Parent(f.path)][f.text.encoding]++;
  std::vector<uint8_t> buf;
  for (auto& f : rep->files) {
    if (!f.is_text || f.text.how != "undecidable") continue;
    if (!ReadAll(rep->root + "/" + f.path, &buf, kMaxTextReadBytes)) continue;
    auto it = votes.find(Parent(f.path));
    if (it != votes.end()) {
      std::string best;
      int best_n = 0, total = 0;
      for (auto& [enc, cnt] : it->second) {
        total += cnt;
        bool fits = std::find(f.text.candidates.begin(), f.text.candidates.end(), enc) != f.text.candidates.end();
        if (fits && cnt > best_n) { best = enc; best_n = cnt; }
      }
      if (!best.empty()) {
        f.text.encoding = best;
        f.text.how = "folder-vote";
        f.findings.push_back(Note(FindingCode::kEncodingVoted, Severity::kInfo,
            "too short to detect; " + best + " chosen by " + std::to_string(best_n) + " of " +
            std::to_string(total) + " detected files in its folder"));
      }
    }
    Conversion conv;
    for (auto& x : TextFindings(buf.data(), buf.size(), f.text, &conv)) f.findings.push_back(std::move(x));
    if (!f.text.encoding.empty()) KeepConversion(opt, &conv, &f);
  }
}

// An entry the walk reports instead of checking.
FileReport Entry(const std::string& rel, FindingCode code, Severity sev, std::string msg) {
  FileReport r;
  r.path = rel;
  r.not_a_file = true;
  r.findings.push_back(Note(code, sev, std::move(msg)));
  return r;
}

const char* SpecialKind(fs::file_type t) {
  switch (t) {
    case fs::file_type::fifo: return "a FIFO (named pipe): reading it would block";
    case fs::file_type::socket: return "a socket";
    case fs::file_type::block: return "a block device";
    case fs::file_type::character: return "a character device";
    default: return "not a regular file, folder or symlink";
  }
}

// Every entry below root (paths relative to it). Regular files are checked later; folders that cannot
// be listed, dangling links, link loops and special files (FIFO, socket, device) each get a finding
// here and are never opened. Links to files or folders are not followed (as before: a link could
// leave the tree, or count a file twice). Uses the error_code overloads throughout: nothing throws.
void Walk(const std::string& root, std::vector<FileReport>* files) {
  std::vector<std::string> folders{""};
  while (!folders.empty()) {
    const std::string rel = std::move(folders.back());
    folders.pop_back();
    const std::string abs = rel.empty() ? root : (root == "/" ? "/" + rel : root + "/" + rel);
    std::error_code ec;
    fs::directory_iterator it(abs, ec);
    const std::string shown = rel.empty() ? "." : rel + "/";
    if (ec) {
      files->push_back(Entry(shown, FindingCode::kUnreadable, Severity::kError,
                             "folder cannot be listed (" + ec.message() + "): nothing in it was checked"));
      continue;
    }
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      const std::string child = rel.empty() ? name : rel + "/" + name;
      std::error_code e2;
      const fs::file_status st = it->symlink_status(e2);
      if (e2) {
        files->push_back(Entry(child, FindingCode::kUnreadable, Severity::kError, "cannot stat: " + e2.message()));
        continue;
      }
      switch (st.type()) {
        case fs::file_type::directory: folders.push_back(child); break;
        case fs::file_type::regular: {
          FileReport fr;
          fr.path = child;
          files->push_back(std::move(fr));
          break;
        }
        case fs::file_type::symlink: {
          std::error_code e3;
          const fs::file_status target = fs::status(it->path(), e3);
          if (e3.value() == ELOOP)
            files->push_back(Entry(child, FindingCode::kSymlinkLoop, Severity::kError,
                                   "a symlink loop (too many levels of symbolic links)"));
          else if (target.type() == fs::file_type::not_found)
            files->push_back(Entry(child, FindingCode::kDanglingSymlink, Severity::kWarning,
                                   "a symlink to a missing target (" + fs::read_symlink(it->path(), e3).string() + ")"));
          break;
        }
        default:
          files->push_back(Entry(child, FindingCode::kNotARegularFile, Severity::kWarning,
                                 std::string(SpecialKind(st.type())) + "; not read"));
      }
    }
    if (ec)
      files->push_back(Entry(shown, FindingCode::kUnreadable, Severity::kError,
                             "listing the folder failed (" + ec.message() + "): some entries were not checked"));
  }
}

}  // namespace

Result<DataReport> CheckTree(const DataOptions& opt) {
  std::error_code ec;
  if (!fs::is_directory(opt.root, ec)) return IoError(opt.root + ": not a readable directory");
  DataReport rep;
  rep.root = opt.root;
  while (rep.root.size() > 1 && rep.root.back() == '/') rep.root.pop_back();
  auto t0 = std::chrono::steady_clock::now();
  if (fs::directory_iterator probe(rep.root, ec); ec) return IoError(opt.root + ": " + ec.message());
  Walk(rep.root, &rep.files);
  std::sort(rep.files.begin(), rep.files.end(),
            [](const FileReport& a, const FileReport& b) { return a.path < b.path; });
  int jobs = opt.jobs > 0 ? opt.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  jobs = std::max(1, std::min<int>(jobs, static_cast<int>(std::max<size_t>(1, rep.files.size()))));
  rep.jobs = jobs;
  rep.files_found = rep.files.size();
  std::atomic<size_t> next{0}, done{0};
  std::atomic<bool> stopped{false};
  std::vector<char> checked(rep.files.size(), 0);
  auto worker = [&] {
    std::vector<uint8_t> buf;
    for (size_t i; !stopped.load() && (i = next.fetch_add(1)) < rep.files.size();) {
      if (!rep.files[i].not_a_file) CheckOne(rep.root + "/" + rep.files[i].path, &rep.files[i], opt, &buf);
      checked[i] = 1;
      for (auto& f : rep.files[i].findings) f.path = rep.files[i].path;
      done.fetch_add(1);
    }
  };
  std::vector<std::thread> pool;
  for (int j = 0; j < jobs; ++j) pool.emplace_back(worker);
  if (opt.on_progress || opt.stop) {
    const size_t total = rep.files.size();
    while (done.load() < total && !stopped.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (opt.stop && opt.stop()) stopped = true;
      if (opt.on_progress) opt.on_progress(done.load(), total);
    }
  }
  for (auto& t : pool) t.join();
  if (stopped.load()) {  // keep only the files that were checked
    rep.interrupted = true;
    size_t k = 0;
    for (size_t i = 0; i < rep.files.size(); ++i)
      if (checked[i]) rep.files[k++] = std::move(rep.files[i]);
    rep.files.resize(k);
  }
  VoteAndFinish(opt, &rep);
  for (auto& f : rep.files)
    for (auto& x : f.findings) x.path = f.path;
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

std::string ManifestText(const DataReport& r) {
  std::string s;
  for (const auto& f : r.files)
    if (!f.sha256.empty()) s += Sha256SumLine(f.sha256, f.path);
  return s;
}

Status VerifyAgainst(const std::string& manifest_path, DataReport* r) {
  std::string text, why;
  if (!ReadRegularFile(manifest_path, kMaxChecksumListBytes, &text, &why))
    return IoError(manifest_path + ": cannot read the manifest (" + why + ")");
  ChecksumList list = ParseSha256Sums(text);
  // As sha256sum -c: a list with no usable line is an error; bad lines beside good ones are
  // reported (file and line) and the good lines are still checked.
  if (list.entries.empty())
    return Corrupt(manifest_path + ": no properly formatted SHA256 checksum lines found" +
                   (list.problems.empty() ? std::string()
                                          : " (line " + std::to_string(list.problems[0].line) + ": " +
                                                list.problems[0].message + ")"));
  // Names are relative to the directory sha256sum -c runs in (the root); "./a" and "a//b" are
  // the same file as "a" and "a/b".
  std::error_code ec0;
  const fs::path root_abs = fs::weakly_canonical(r->root, ec0);
  auto tree_path = [&](const std::string& listed) {
    fs::path p(listed);
    if (p.is_absolute()) {
      std::error_code ec;
      std::string rel = fs::weakly_canonical(p, ec).lexically_relative(root_abs).generic_string();
      return rel.empty() || rel.rfind("..", 0) == 0 ? listed : rel;
    }
    std::string n = p.lexically_normal().generic_string();
    return n.empty() ? listed : n;
  };
  std::multimap<std::string, const ChecksumEntry*> want;
  for (const auto& e : list.entries) want.emplace(tree_path(e.path), &e);
  // The manifest itself may live in the tree; it is not an unexpected file.
  std::error_code ec;
  std::string self;
  fs::path mp = fs::weakly_canonical(manifest_path, ec), rp = fs::weakly_canonical(r->root, ec);
  auto rel = mp.lexically_relative(rp).generic_string();
  if (!rel.empty() && rel.rfind("..", 0) != 0) self = rel;
  std::map<std::string, FileReport*> have;
  for (auto& f : r->files)
    if (!f.not_a_file) have[f.path] = &f;
  // Reports for files not in the tree go to `ghosts`, appended at the end: pushing into r->files
  // here would move the reports `have` points to.
  std::vector<FileReport> ghosts;
  std::set<std::string> reported_missing;
  for (auto& [path, e] : want) {
    auto it = have.find(path);
    if (it == have.end()) {
      if (!reported_missing.insert(path).second) continue;
      Finding f = Note(FindingCode::kMissing, Severity::kError,
                       "listed in the manifest (line " + std::to_string(e->line) + ") but not in the tree");
      f.path = path;
      FileReport ghost;
      ghost.path = path;
      ghost.findings.push_back(f);
      ghosts.push_back(std::move(ghost));
      continue;
    }
    if (it->second->sha256 != e->hex) {
      Finding f = Note(FindingCode::kHashMismatch, Severity::kError,
                       "SHA-256 " + it->second->sha256 + " differs from the manifest's " + e->hex + " (line " +
                           std::to_string(e->line) + "; changed or corrupted in transfer)");
      f.path = path;
      it->second->findings.push_back(f);
    }
  }
  // Lines sha256sum -c warns about ("improperly formatted"): a finding on the manifest, by line.
  FileReport manifest_ghost;
  manifest_ghost.path = self.empty() ? manifest_path : self;
  FileReport* manifest_report = !self.empty() && have.count(self) ? have[self] : &manifest_ghost;
  for (const auto& p : list.problems) {
    Finding f = Note(FindingCode::kChecksumLineInvalid, Severity::kWarning,
                     p.message + "; sha256sum -c skips this line, so no file is checked by it");
    f.path = manifest_report->path;
    f.line = p.line;
    f.column = 1;
    manifest_report->findings.push_back(f);
  }
  for (auto& f : r->files) {
    if (f.not_a_file || want.count(f.path) || f.path == self || f.path == self + ".json") continue;
    Finding x = Note(FindingCode::kUnexpected, Severity::kWarning, "in the tree but not in the manifest");
    x.path = f.path;
    f.findings.push_back(x);
  }
  if (!manifest_ghost.findings.empty()) ghosts.push_back(std::move(manifest_ghost));
  for (auto& g : ghosts) r->files.push_back(std::move(g));
  std::sort(r->files.begin(), r->files.end(),
            [](const FileReport& a, const FileReport& b) { return a.path < b.path; });
  return Status::Ok();
}

DataSummary Summarize(const DataReport& r) {
  DataSummary s;
  for (const auto& f : r.files) {
    const bool ghost = f.size == 0 && f.content == Format::kUnknown && f.findings.size();
    std::string fmt = f.not_a_file ? "not-a-file" : FormatName(f.content);
    if (ghost && f.findings[0].code == FindingCode::kMissing) fmt = "missing";
    else if (ghost && f.findings[0].code == FindingCode::kChecksumLineInvalid) fmt = "manifest";
    s.by_format[fmt]++;
    bool any = false;
    for (const auto& x : f.findings) {
      s.by_finding[FindingCodeName(x.code)]++;
      any |= x.severity != Severity::kInfo;
    }
    s.files_and_flagged[fmt].first++;
    s.files_and_flagged[fmt].second += any;
  }
  return s;
}

nlohmann::json DataReportJson(const DataReport& r, const DataSummary& s) {
  using nlohmann::json;
  json j;
  j["root"] = r.root;
  j["files"] = r.files.size();
  j["files_with_findings"] = r.FilesWithFindings();
  j["seconds"] = r.seconds;
  j["jobs"] = r.jobs;
  j["interrupted"] = r.interrupted;
  j["by_format"] = s.by_format;
  j["by_finding"] = s.by_finding;
  json items = json::array(), findings = json::array();
  for (const auto& f : r.files) {
    json it = {{"path", f.path}, {"size", f.size}, {"format", f.not_a_file ? "not-a-file" : FormatName(f.content)},
               {"extension_format", FormatName(f.by_extension)}};
    if (f.is_image) {
      it["width"] = f.image.width;
      it["height"] = f.image.height;
      it["decoded"] = f.image.decoded;
      if (f.image.format == Format::kJpeg) {
        it["progressive"] = f.image.progressive;
        it["arithmetic"] = f.image.arithmetic;
        it["bit_depth"] = f.image.bit_depth;
        it["cmyk"] = f.image.cmyk;
        it["subsampling"] = f.image.subsampling;
      }
    }
    if (f.is_text) {
      it["encoding"] = f.text.encoding;
      it["encoding_by"] = f.text.how;
      it["detector_said"] = f.text.detector_said;
      it["candidates"] = f.text.candidates;
      if (!f.text.secondary.empty()) {
        it["secondary_encoding"] = f.text.secondary;
        it["secondary_lines"] = f.repaired_lines;
      }
    }
    if (!f.sha256.empty()) it["sha256"] = f.sha256;
    items.push_back(std::move(it));
    for (const auto& x : f.findings) {
      json fj = {{"path", x.path}, {"code", FindingCodeName(x.code)}, {"severity", SeverityName(x.severity)},
                 {"message", x.message}};
      if (x.offset >= 0) fj["offset"] = x.offset;
      if (x.line >= 0) { fj["line"] = x.line; fj["column"] = x.column; }
      if (!x.fix.empty()) fj["fix"] = x.fix;
      findings.push_back(std::move(fj));
    }
  }
  j["items"] = std::move(items);
  j["findings"] = std::move(findings);
  return j;
}

namespace {

// Writes a fixed copy; never through a symlink (a link planted in the output tree could point into the input
// tree): every component below out_dir must be a real folder, and the file is opened with O_NOFOLLOW.
bool WriteFile(const fs::path& out_dir, const fs::path& p, const void* data, size_t n) {
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  for (fs::path d = p.parent_path(); !d.empty() && d != out_dir && d.string().size() > out_dir.string().size();
       d = d.parent_path())
    if (fs::is_symlink(fs::symlink_status(d, ec))) return false;
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const auto* b = static_cast<const uint8_t*>(data);
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(fd, b + done, n - done);
    if (w <= 0) break;
    done += static_cast<size_t>(w);
  }
  return ::close(fd) == 0 && done == n;
}

// Findings that mean the file's content is damaged (not merely unsuitable for the target), or was not
// decoded at all (over a size limit, a variant this libjpeg does not decode): the rewrite would decode it
// with no limit of its own.
bool Damaged(const FileReport& f, std::string* why) {
  for (const auto& x : f.findings)
    if (x.code == FindingCode::kTruncated || x.code == FindingCode::kCorrupt || x.code == FindingCode::kEmpty ||
        x.code == FindingCode::kUnsupportedVariant) {
      *why = std::string(FindingCodeName(x.code)) + ": " + x.message;
      return true;
    }
  return false;
}

}  // namespace

// A rewrite of a damaged image is refused (a fix-refused finding on the file): the decoders fill what is
// lost, so the rewritten copy would check clean while its lost rows are garbage.
std::vector<std::string> WriteFixes(DataReport& r, const std::string& out_dir) {
  std::vector<std::string> log;
  std::vector<uint8_t> buf;
  for (auto& f : r.files) {
    std::string target = f.path;
    bool rename = false, reencode = false, jpeg_baseline = false;
    int64_t rw = 0, rh = 0;
    for (const auto& x : f.findings) {
      if (x.code == FindingCode::kExtensionMismatch && IsImageFormat(f.content)) rename = true;
      if (x.code == FindingCode::kExceedsHwDecoder && f.content == Format::kJpeg) {
        long long w, h;
        if (std::sscanf(x.fix.c_str(), "resize to %lldx%lld", &w, &h) == 2) { rw = w; rh = h; }
        else if (x.fix == "re-encode as baseline JPEG" || x.fix == "re-encode with Huffman coding") jpeg_baseline = true;
      }
    }
    if (f.is_text && !f.utf8.empty()) reencode = true;
    if (!rename && !reencode && !jpeg_baseline && !rw) continue;
    std::string damage;
    if ((jpeg_baseline || rw) && Damaged(f, &damage)) {
      Finding x = Note(FindingCode::kFixRefused, Severity::kWarning,
                       "--fix does not rewrite a damaged image (" + damage + "): the copy would check clean while "
                       "the lost part is filled in; recover the original instead" +
                           (rename ? "; copied unchanged under the extension of its content" : ""));
      x.path = f.path;
      f.findings.push_back(x);
      log.push_back(f.path + ": REFUSED to rewrite for the target (" + damage + ")");
      jpeg_baseline = false;
      rw = 0;
      if (!rename) continue;
    }
    if (rename) target = Renamed(f.path, FormatExtension(f.content));
    fs::path dst = fs::path(out_dir) / target;
    bool ok;
    std::string what;
    if (reencode) {
      ok = WriteFile(out_dir, dst, f.utf8.data(), f.utf8.size());
      const size_t bad = f.bad_sequences;
      what = "re-encoded " + f.text.encoding + (f.text.bom_bytes ? " (BOM dropped)" : "") + " -> UTF-8";
      if (!f.repaired_lines.empty()) {
        // Every repaired line by number: the log is what a reviewer checks the output against.
        std::string ls;
        for (int64_t l : f.repaired_lines) ls += (ls.empty() ? "" : ", ") + std::to_string(l);
        what += ", " + std::to_string(f.repaired_lines.size()) + " line(s) decoded as " + f.text.secondary +
                " (lossless, round trip checked): lines " + ls;
      }
      // Lost bytes cannot be recovered: the copy is partial, and its U+FFFD are flagged when checked.
      if (bad) what += ", PARTIAL: " + std::to_string(bad) + " bad sequence(s) -> U+FFFD (replacement-character when checked)";
    } else if (rw || jpeg_baseline) {
      ok = ReadAll(r.root + "/" + f.path, &buf);
      auto res = rw ? JpegResizeToFit(buf.data(), buf.size(), rw, rh) : JpegToBaseline(buf.data(), buf.size());
      if (ok && !res.ok() && res.status().code() == StatusCode::kCorrupt) {
        // jpeg_fix found damage the decode did not report: refuse, as above.
        Finding x = Note(FindingCode::kFixRefused, Severity::kWarning, "--fix refused: " + res.status().message());
        x.path = f.path;
        f.findings.push_back(x);
      }
      if (ok && res.ok()) {
        ok = WriteFile(out_dir, dst, res.value().data(), res.value().size());
        what = rw ? "resized to fit " + std::to_string(rw) + "x" + std::to_string(rh) +
                        " (libjpeg DCT scaling, aspect kept), baseline Huffman, quality 90"
                  : "transcoded losslessly to baseline sequential Huffman JPEG";
      } else {
        ok = false;
        what = res.ok() ? "" : res.status().message();
      }
    } else {
      ok = ReadAll(r.root + "/" + f.path, &buf) && WriteFile(out_dir, dst, buf.data(), buf.size());
      what = std::string("copied with the extension of its content (") + FormatName(f.content) + ")";
    }
    log.push_back(f.path + " -> " + target + ": " + (ok ? what : "FAILED (" + what + ") " + dst.string()));
  }
  return log;
}

}  // namespace edgedecode::doctor
