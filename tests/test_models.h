// Models a test suite loads once and shares between its tests: GGUFs from the test data, by path, and
// models that `edgedecode synth` writes to temp files for the suite (removed when the set is cleared).
// Not thread-safe: a suite fills it in SetUpTestSuite and clears it in TearDownTestSuite.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli_util.h"
#include "llm/model.h"

namespace edgedecode::test {

class TestModels {
 public:
  // Loads `path` (a gtest failure when it does not load).
  void AddFile(const std::string& path) { Load(path, false); }
  // Synthesizes `preset` at `type` into a temp file named after `tag`, then loads it.
  void AddSynth(const std::string& tag, const std::string& preset, const std::string& type) {
    const std::string path = TempPath(tag + ".gguf");
    ASSERT_EQ(RunEdgedecode("synth --preset " + preset + " --type " + type + " -o " + path).exit_code, 0) << preset;
    Load(path, true);
  }
  // Frees the models and removes the synthesized files.
  void Clear() {
    for (Entry& e : entries_) {
      e.model.reset();
      if (e.synthesized) std::remove(e.path.c_str());
    }
    entries_.clear();
  }
  size_t size() const { return entries_.size(); }
  const llm::Model& operator[](size_t i) const { return *entries_.at(i).model; }
  const std::string& path(size_t i) const { return entries_.at(i).path; }

 private:
  struct Entry {
    std::string path;
    bool synthesized;
    std::unique_ptr<llm::Model> model;
  };
  void Load(const std::string& path, bool synthesized) {
    auto r = llm::Model::Load(path, false);
    if (!r.ok()) {
      if (synthesized) std::remove(path.c_str());
      FAIL() << path << ": " << r.status().message();
    }
    entries_.push_back({path, synthesized, std::move(r).value()});
  }
  std::vector<Entry> entries_;
};

}  // namespace edgedecode::test
