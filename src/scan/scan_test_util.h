// Building small ONNX models inside tests (the onnx protobuf API), writing them to a per-process temp dir,
// and running a call in a child process under an address-space limit.
#pragma once

#include <onnx/onnx_pb.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "base/child_limit.h"

namespace edgedecode::scan::scantest {

inline std::string TestDir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}

inline std::string WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 13) {
    m_.set_ir_version(8);
    m_.add_opset_import()->set_version(opset);
    m_.mutable_graph()->set_name("g");
  }
  onnx::GraphProto* graph() { return m_.mutable_graph(); }
  onnx::ModelProto& model() { return m_; }

  static void SetType(onnx::ValueInfoProto* vi, int32_t type, std::initializer_list<int64_t> dims) {
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    auto* shape = tt->mutable_shape();
    for (int64_t d : dims) {
      if (d < 0) shape->add_dim()->set_dim_param("N");
      else shape->add_dim()->set_dim_value(d);
    }
  }
  ModelBuilder& Input(const std::string& name, std::initializer_list<int64_t> dims, int32_t type = onnx::TensorProto::FLOAT) {
    auto* vi = graph()->add_input();
    vi->set_name(name);
    SetType(vi, type, dims);
    return *this;
  }
  ModelBuilder& Output(const std::string& name) {
    graph()->add_output()->set_name(name);
    return *this;
  }
  onnx::TensorProto* Init(const std::string& name, std::initializer_list<int64_t> dims, const std::vector<float>& values) {
    auto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return t;
  }
  onnx::TensorProto* InitInt64(const std::string& name, const std::vector<int64_t>& values) {
    auto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return t;
  }
  onnx::NodeProto* Node(const std::string& op, std::initializer_list<std::string> in, std::initializer_list<std::string> out,
                        const std::string& name = "") {
    auto* n = graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(graph()->node_size()) : name);
    for (const auto& i : in) n->add_input(i);
    for (const auto& o : out) n->add_output(o);
    return n;
  }
  static void Ints(onnx::NodeProto* n, const std::string& name, std::initializer_list<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void Int(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void Str(onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  std::string Write(const std::string& path) const { return WriteFile(path, m_.SerializeAsString()); }

 private:
  onnx::ModelProto m_;
};

// Hostile-model tests run in a child under RLIMIT_AS and an alarm: base/child_limit.h.
using testing_util::ChildResult;
inline bool UnderAsan() { return !testing_util::MemoryLimitApplies(); }
inline ChildResult RunLimited(const std::function<int()>& fn, uint64_t limit, unsigned seconds = 120) {
  return testing_util::RunInChild([&](std::string*) { return fn(); }, limit, seconds);
}

}  // namespace edgedecode::scan::scantest
