// Constrained generation of JSON: a JSON Schema (the subset OpenAI's strict structured outputs use) compiled
// to a byte-level incremental automaton, and the mask of the vocabulary's tokens whose bytes keep the text
// a valid prefix of a JSON text that validates against it. Prints nothing; a compiled grammar is immutable
// and shared by threads, a JsonMatcher belongs to one sequence.
//
// Supported keywords: type (one or an array of object, array, string, number, integer, boolean, null),
// properties, required, additionalProperties (false, true or a schema), items (one schema), enum, const,
// anyOf, $ref to "#" or "#/$defs/NAME" ("#/definitions/NAME"; recursion allowed), $defs / definitions,
// and the annotations title, description, $comment, $schema, $id, examples, default. Anything else is
// refused, naming the keyword and where it is. What is generated: compact enum / const values, integers
// without fraction or exponent, object keys without escapes (unless a property's name needs them).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "edgedecode/status.h"

namespace edgedecode::llm {

inline constexpr int kMaxSchemaDepth = 32;        // nesting of schema objects
inline constexpr int kMaxSchemaNodes = 4096;      // compiled schema objects
inline constexpr int kMaxSchemaProperties = 64;   // properties of one object schema
inline constexpr int kMaxOutputDepth = 32;          // nesting of the generated objects and arrays
inline constexpr size_t kMaxParses = 64;          // alternatives (anyOf) followed at once; beyond, dropped
inline constexpr int kMaxWhitespaceRun = 1;       // whitespace bytes in a row between JSON tokens
inline constexpr int kMaxNumberBytes = 32;        // bytes of one number
inline constexpr int kMaxFreeKeyBytes = 256;      // bytes of a key that is not a declared property
inline constexpr size_t kMaxNameBytes = 1024;     // bytes of a declared property's name

struct JsonGrammar;  // a compiled schema

// schema_json: the schema's JSON text. InvalidArgument naming the keyword and its JSON pointer otherwise.
Result<std::shared_ptr<const JsonGrammar>> CompileJsonSchema(std::string_view schema_json);
// Any JSON object (OpenAI's {"type": "json_object"}).
std::shared_ptr<const JsonGrammar> AnyJsonObjectGrammar();

// The vocabulary's token bytes, sorted so that tokens sharing a prefix are checked together.
class TokenBytes {
 public:
  // pieces[id]: the bytes token id adds to the text; an empty piece (a control token) is never allowed.
  explicit TokenBytes(std::vector<std::string> pieces);
  int size() const { return static_cast<int>(pieces_.size()); }
  const std::string& piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }

 private:
  friend class JsonMatcher;
  std::vector<std::string> pieces_;
  std::vector<int32_t> order_;  // ids by their bytes
  std::vector<uint32_t> lcp_;   // bytes order_[i] shares with order_[i - 1]
  std::vector<uint8_t> plain_;  // whole characters without quote, backslash or control bytes: string content
};

// The text generated so far, as the set of parses it may continue.
class JsonMatcher {
 public:
  explicit JsonMatcher(std::shared_ptr<const JsonGrammar> g);
  ~JsonMatcher();
  JsonMatcher(const JsonMatcher&);
  JsonMatcher& operator=(const JsonMatcher&);
  JsonMatcher(JsonMatcher&&) noexcept;
  JsonMatcher& operator=(JsonMatcher&&) noexcept;

  // Appends bytes; false (and nothing changed) when they do not continue a valid text.
  bool Advance(std::string_view bytes);
  // The text is a whole JSON value that validates: end-of-generation may come now.
  bool Complete() const;
  // (*allowed)[id] = 1 when token id's bytes keep the text a valid prefix, else 0.
  void AllowedTokens(const TokenBytes& vocab, std::vector<uint8_t>* allowed) const;

  struct State;

 private:
  std::shared_ptr<const JsonGrammar> g_;
  std::vector<State> states_;
};

}  // namespace edgedecode::llm
