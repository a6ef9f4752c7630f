// GGUF reader/writer: round trips of every value and tensor type, the real
// test-data files, and one distinct error per kind of malformed file.
#include "format/gguf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "tensor/dtype.h"
#include "temp_dir.h"

namespace og {
namespace {

const std::string kModels = std::string(OG_TESTDATA_DIR) + "/models";

// Hand-assembles GGUF bytes for malformed-file tests.
struct Bytes {
  std::vector<uint8_t> b;
  template <class T>
  Bytes& put(T v) {
    size_t at = b.size();
    b.resize(at + sizeof(T));
    std::memcpy(b.data() + at, &v, sizeof(T));
    return *this;
  }
  Bytes& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return put<uint32_t>(0x46554747).put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
  }
  Bytes& kv_u32(const std::string& k, uint32_t v) { return str(k).put<uint32_t>(4).put<uint32_t>(v); }
  // One tensor info with ne[] given fastest first.
  Bytes& tensor(const std::string& name, std::vector<int64_t> ne, uint32_t type, uint64_t offset) {
    str(name).put<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (int64_t d : ne) put<int64_t>(d);
    return put<uint32_t>(type).put<uint64_t>(offset);
  }
  Bytes& pad_to(size_t a) {
    b.resize((b.size() + a - 1) / a * a, 0);
    return *this;
  }
  Bytes& zeros(size_t n) {
    b.resize(b.size() + n, 0);
    return *this;
  }
};

// Parses and returns the error message ("" when it parsed).
std::string parse_error(const std::vector<uint8_t>& b) {
  try {
    GgufFile::parse(b.data(), b.size(), "bad.gguf");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_PARSE_ERROR(bytes, substr)                          \
  do {                                                             \
    std::string msg_ = parse_error(bytes);                         \
    EXPECT_NE(msg_.find("bad.gguf: "), std::string::npos) << msg_; \
    EXPECT_NE(msg_.find(substr), std::string::npos) << msg_;       \
  } while (0)

TEST(Gguf, RoundTripsEveryValueType) {
  GgufWriter w;
  w.set("u8", GgufValue::make_int(GgufType::U8, 250));
  w.set("i8", GgufValue::make_int(GgufType::I8, -120));
  w.set("u16", GgufValue::make_int(GgufType::U16, 65000));
  w.set("i16", GgufValue::make_int(GgufType::I16, -32000));
  w.set("u32", GgufValue::make_u32(4000000000u));
  w.set("i32", GgufValue::make_i32(-2000000000));
  w.set("u64", GgufValue::make_u64(18000000000000000000ull));
  w.set("i64", GgufValue::make_int(GgufType::I64, -9000000000000000000ll));
  w.set("f32", GgufValue::make_f32(1.5e-5f));
  w.set("f64", GgufValue::make_f64(3.141592653589793));
  w.set("bool", GgufValue::make_bool(true));
  w.set("str", GgufValue::make_string("h\xc3\xa9llo"));
  w.set("empty_str", GgufValue::make_string(""));
  w.set("arr_str", GgufValue::make_array(GgufType::STRING, {GgufValue::make_string("a"), GgufValue::make_string("")}));
  w.set("arr_f32", GgufValue::make_array(GgufType::F32, {GgufValue::make_f32(1), GgufValue::make_f32(-2.5f)}));
  w.set("arr_i32", GgufValue::make_array(GgufType::I32, {GgufValue::make_i32(-1), GgufValue::make_i32(7)}));
  w.set("arr_empty", GgufValue::make_array(GgufType::U8, {}));
  std::vector<GgufValue> inner1 = {GgufValue::make_u32(1), GgufValue::make_u32(2)};
  std::vector<GgufValue> inner2 = {GgufValue::make_u32(3)};
  GgufValue nested = GgufValue::make_array(
      GgufType::ARRAY, {GgufValue::make_array(GgufType::U32, inner1), GgufValue::make_array(GgufType::U32, inner2)});
  w.set("arr_arr", nested);
  GgufValue deeper = GgufValue::make_array(GgufType::ARRAY, {nested, GgufValue::make_array(GgufType::ARRAY, {})});
  w.set("arr_arr_arr", deeper);
  w.set("u32", GgufValue::make_u32(42));  // replaces, keeps position
  std::vector<uint8_t> bytes = w.serialize();
  auto g = GgufFile::parse(bytes.data(), bytes.size(), "rt.gguf");
  EXPECT_EQ(g->version(), 3u);
  ASSERT_EQ(g->metadata().size(), 19u);
  EXPECT_EQ(g->metadata()[4].first, "u32");
  EXPECT_EQ(*g->get_int("u8"), 250);
  EXPECT_EQ(*g->get_int("i8"), -120);
  EXPECT_EQ(*g->get_int("u16"), 65000);
  EXPECT_EQ(*g->get_int("i16"), -32000);
  EXPECT_EQ(*g->get_int("u32"), 42);
  EXPECT_EQ(*g->get_int("i32"), -2000000000);
  EXPECT_EQ(g->get("u64")->u, 18000000000000000000ull);
  EXPECT_THROW(g->get_int("u64"), Error);  // does not fit int64
  EXPECT_EQ(*g->get_int("i64"), -9000000000000000000ll);
  EXPECT_FLOAT_EQ(static_cast<float>(*g->get_float("f32")), 1.5e-5f);
  EXPECT_EQ(*g->get_float("f64"), 3.141592653589793);
  EXPECT_EQ(*g->get_bool("bool"), true);
  EXPECT_EQ(*g->get_string("str"), "h\xc3\xa9llo");
  EXPECT_EQ(*g->get_string("empty_str"), "");
  EXPECT_EQ(*g->get_string_array("arr_str"), (std::vector<std::string>{"a", ""}));
  EXPECT_EQ(*g->get_float_array("arr_f32"), (std::vector<double>{1, -2.5}));
  EXPECT_EQ(*g->get_int_array("arr_i32"), (std::vector<int64_t>{-1, 7}));
  EXPECT_TRUE(g->get_int_array("arr_empty")->empty());
  EXPECT_TRUE(*g->get("arr_arr") == nested);
  EXPECT_TRUE(*g->get("arr_arr_arr") == deeper);
  EXPECT_FALSE(g->get("missing"));
  EXPECT_FALSE(g->get_int("missing").has_value());
  // Every value compares equal to what was written.
  auto again = GgufFile::parse(bytes.data(), bytes.size(), "rt.gguf");
  for (size_t k = 0; k < g->metadata().size(); ++k) EXPECT_TRUE(g->metadata()[k].second == again->metadata()[k].second);
}

TEST(Gguf, ValueEqualityTreatsNaNAsItself) {
  GgufValue n = GgufValue::make_f32(std::nanf(""));
  EXPECT_TRUE(n == n);
  EXPECT_FALSE(n == GgufValue::make_f32(0));
  EXPECT_FALSE(GgufValue::make_u32(1) == GgufValue::make_i32(1));  // type matters
}

TEST(Gguf, TypedGettersNameTheKeyOnWrongType) {
  GgufWriter w;
  w.set("k.str", GgufValue::make_string("x"));
  w.set("k.int", GgufValue::make_u32(1));
  std::vector<uint8_t> bytes = w.serialize();
  auto g = GgufFile::parse(bytes.data(), bytes.size(), "t.gguf");
  try {
    g->get_int("k.str");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("t.gguf: k.str must be an integer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(g->get_string("k.int"), Error);
  EXPECT_THROW(g->get_bool("k.int"), Error);
  EXPECT_THROW(g->get_string_array("k.str"), Error);
  EXPECT_EQ(*g->get_float("k.int"), 1.0);
}

TEST(Gguf, RoundTripsEveryTensorTypeWeCanSize) {
  GgufWriter w;
  w.set("general.alignment", GgufValue::make_u32(64));
  int n = 0;
  std::vector<uint32_t> ids;
  for (uint32_t id = 0; id < 64; ++id) {
    const DTypeInfo* info = dtype_info(id);
    if (!info || info->internal) continue;  // in-memory layouts never go to a file
    std::vector<int64_t> shape = {3, 2, info->block * 2};  // row-major, outermost first
    int64_t bytes = 6 * dtype_row_bytes(static_cast<DType>(id), info->block * 2);
    std::vector<uint8_t> data(static_cast<size_t>(bytes));
    for (size_t k = 0; k < data.size(); ++k) data[k] = static_cast<uint8_t>(k * 31 + id);
    w.add_tensor(cat("t", id), static_cast<DType>(id), shape, data);
    ids.push_back(id);
    ++n;
  }
  EXPECT_GE(n, 35);
  std::vector<uint8_t> bytes = w.serialize();
  auto g = GgufFile::parse(bytes.data(), bytes.size(), "types.gguf");
  EXPECT_EQ(g->alignment(), 64u);
  EXPECT_EQ(g->data_offset() % 64, 0u);
  ASSERT_EQ(g->tensors().size(), ids.size());
  for (uint32_t id : ids) {
    const TensorInfo* t = g->find(cat("t", id));
    ASSERT_TRUE(t);
    const DTypeInfo* info = dtype_info(id);
    EXPECT_EQ(t->type_id, id);
    EXPECT_EQ(t->type_name, info->name);
    EXPECT_EQ(t->known_type, info->computable);
    EXPECT_EQ(t->shape, (std::vector<int64_t>{3, 2, info->block * 2}));
    ASSERT_EQ(t->nbytes, static_cast<uint64_t>(6 * dtype_row_bytes(static_cast<DType>(id), info->block * 2)));
    EXPECT_EQ((t->data - bytes.data()) % 64, 0);
    for (uint64_t k = 0; k < t->nbytes; ++k) ASSERT_EQ(t->data[k], static_cast<uint8_t>(k * 31 + id));
    if (info->computable) {
      TensorView v = tensor_view(*g, *t);
      EXPECT_EQ(v.data, t->data);
      EXPECT_EQ(static_cast<uint32_t>(v.dtype), id);
      EXPECT_EQ(v.nbytes(), static_cast<int64_t>(t->nbytes));
    } else {
      try {
        tensor_view(*g, *t);
        ADD_FAILURE() << "no error for " << info->name;
      } catch (const Error& e) {
        std::string m = e.what();
        EXPECT_NE(m.find(cat("types.gguf: tensor t", id, " has type ", info->name)), std::string::npos) << m;
      }
    }
  }
}

TEST(Gguf, StreamedTensorsWriteTheSameFile) {
  GgufWriter a, b;
  std::vector<uint8_t> data(4 * 8 * 4);
  for (size_t k = 0; k < data.size(); ++k) data[k] = static_cast<uint8_t>(k);
  a.add_tensor("w", DType::F32, {4, 8}, data);
  b.add_tensor("w", DType::F32, {4, 8}, GgufWriter::Producer([&] { return data; }));
  EXPECT_EQ(a.serialize(), b.serialize());
  GgufWriter c;
  c.add_tensor("w", DType::F32, {4, 8}, GgufWriter::Producer([] { return std::vector<uint8_t>(3); }));
  EXPECT_THROW(c.serialize(), Error);
  EXPECT_THROW(a.add_tensor("w", DType::F32, {4, 8}, data), Error);      // duplicate
  EXPECT_THROW(a.add_tensor("x", DType::F32, {4, 8}, {1, 2, 3}), Error);  // wrong size
  EXPECT_THROW(a.add_tensor("y", DType::Q4_0, {4, 8}, data), Error);      // row not a block multiple
}

TEST(Gguf, WritesAndReadsFiles) {
  std::string path = og::test::temp_path("og_gguf_test.gguf");
  GgufWriter w;
  w.set("general.architecture", GgufValue::make_string("llama"));
  std::vector<uint8_t> data(2 * 32 * 2, 7);
  w.add_tensor("a", DType::F16, {2, 32}, data);
  w.add_tensor("b", DType::F16, {1, 32}, std::vector<uint8_t>(64, 9));
  w.write(path);
  auto g = GgufFile::open(path);
  EXPECT_EQ(g->source_name(), path);
  EXPECT_EQ(*g->get_string("general.architecture"), "llama");
  EXPECT_EQ(g->find("a")->data[0], 7);
  EXPECT_EQ(g->find("b")->data[63], 9);
  EXPECT_THROW(w.write("/nonexistent-dir/x.gguf"), Error);
  std::remove(path.c_str());
}

TEST(Gguf, ReadsStories260K) {
  auto g = GgufFile::open(kModels + "/stories260K/stories260K.gguf");
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->alignment(), 32u);
  EXPECT_EQ(*g->get_string("general.architecture"), "llama");
  EXPECT_EQ(*g->get_string("general.name"), "stories260K");
  EXPECT_EQ(*g->get_int("llama.embedding_length"), 64);
  EXPECT_EQ(*g->get_int("llama.block_count"), 5);
  EXPECT_EQ(*g->get_int("llama.feed_forward_length"), 172);
  EXPECT_EQ(*g->get_int("llama.attention.head_count"), 8);
  EXPECT_EQ(*g->get_int("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(*g->get_int("llama.context_length"), 512);
  EXPECT_FLOAT_EQ(static_cast<float>(*g->get_float("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
  EXPECT_EQ(*g->get_float("llama.rope.freq_base"), 10000.0);
  EXPECT_EQ(*g->get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(g->get_string_array("tokenizer.ggml.tokens")->size(), 512u);
  EXPECT_EQ(g->get_float_array("tokenizer.ggml.scores")->size(), 512u);
  EXPECT_EQ(g->get_int_array("tokenizer.ggml.token_type")->size(), 512u);
  EXPECT_EQ(*g->get_int("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(*g->get_bool("tokenizer.ggml.add_bos_token"), true);
  ASSERT_EQ(g->tensors().size(), 47u);
  EXPECT_EQ(g->tensors()[0].name, "token_embd.weight");
  EXPECT_EQ(g->tensors()[0].shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(g->find("blk.0.attn_k.weight")->shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(g->find("blk.4.ffn_down.weight")->shape, (std::vector<int64_t>{64, 172}));
  EXPECT_EQ(g->find("blk.4.ffn_gate.weight")->shape, (std::vector<int64_t>{172, 64}));
  EXPECT_EQ(g->find("output_norm.weight")->shape, (std::vector<int64_t>{64}));
  EXPECT_FALSE(g->find("output.weight"));
  for (const auto& t : g->tensors()) EXPECT_EQ(t.type_name, "f32");
  TensorView v = tensor_view(*g, *g->find("token_embd.weight"));
  EXPECT_EQ(v.nbytes(), 512 * 64 * 4);
}

TEST(Gguf, ReadsStories260KGgmlOrg) {
  auto g = GgufFile::open(kModels + "/stories260K/stories260K-ggml-org.gguf");
  EXPECT_EQ(*g->get_string("general.name"), "llama");
  EXPECT_EQ(*g->get_int("llama.context_length"), 2048);
  EXPECT_EQ(*g->get_int("tokenizer.ggml.padding_token_id"), 4294967295);
  EXPECT_FALSE(g->get("llama.rope.freq_base"));
  ASSERT_EQ(g->tensors().size(), 48u);
  EXPECT_EQ(g->find("output.weight")->shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(g->metadata()[0].first, "tokenizer.ggml.tokens");
}

TEST(Gguf, ReadsLlama2TinyRandom) {
  auto g = GgufFile::open(kModels + "/llama-2-tiny-random-gguf/llama-2-tiny-random.gguf");
  EXPECT_EQ(*g->get_string("general.name"), "LLaMA v2");
  EXPECT_EQ(*g->get_int("llama.context_length"), 4096);
  EXPECT_EQ(*g->get_int("llama.embedding_length"), 8);
  EXPECT_EQ(*g->get_int("llama.attention.head_count"), 2);
  EXPECT_EQ(*g->get_int("general.file_type"), 1);
  EXPECT_EQ(g->get_string_array("tokenizer.ggml.tokens")->size(), 32000u);
  ASSERT_EQ(g->tensors().size(), 12u);
  const TensorInfo* e = g->find("token_embd.weight");
  EXPECT_EQ(e->shape, (std::vector<int64_t>{32000, 8}));
  EXPECT_EQ(e->type_name, "f16");
  EXPECT_EQ(g->find("blk.0.ffn_down.weight")->shape, (std::vector<int64_t>{8, 32}));
  EXPECT_EQ(g->find("blk.0.attn_norm.weight")->type_name, "f32");
  EXPECT_EQ(g->find("output.weight")->nbytes, 32000u * 8 * 2);
}

TEST(Gguf, ReadsVocabOnlyFiles) {
  auto g = GgufFile::open(std::string(OG_TESTDATA_DIR) + "/vocab/ggml-vocab-llama-spm.gguf");
  EXPECT_TRUE(g->tensors().empty());
  EXPECT_EQ(*g->get_string("tokenizer.ggml.model"), "llama");
}

TEST(Gguf, OpenNamesAMissingFile) {
  try {
    GgufFile::open("/nonexistent/m.gguf");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/m.gguf"), std::string::npos);
  }
}

// ---- malformed files: each case its own message ----

TEST(GgufMalformed, HeaderProblems) {
  EXPECT_PARSE_ERROR(std::vector<uint8_t>{}, "too small to be a GGUF file");
  EXPECT_PARSE_ERROR(std::vector<uint8_t>(10, 0), "too small to be a GGUF file");
  Bytes magic;
  magic.put<uint32_t>(0x46554748).put<uint32_t>(3).put<uint64_t>(0).put<uint64_t>(0);
  EXPECT_PARSE_ERROR(magic.b, "bad magic");
  EXPECT_PARSE_ERROR(Bytes().header(0, 0, 1).b, "version 1 is not supported");
  EXPECT_PARSE_ERROR(Bytes().header(0, 0, 0).b, "unsupported GGUF version 0");
  EXPECT_PARSE_ERROR(Bytes().header(0, 0, 4).b, "unsupported GGUF version 4");
  EXPECT_PARSE_ERROR(Bytes().header(0, 0, 0x03000000).b, "byte-swapped");
  EXPECT_EQ(parse_error(Bytes().header(0, 0, 2).b), "");
  EXPECT_PARSE_ERROR(Bytes().header(0, 1ull << 60).b, "metadata count 1152921504606846976 is more than");
  EXPECT_PARSE_ERROR(Bytes().header(1ull << 62, 0).b, "tensor count 4611686018427387904 is more than");
}

TEST(GgufMalformed, MetadataProblems) {
  Bytes trunc;
  trunc.header(0, 1).str("general.architecture").put<uint32_t>(4);
  EXPECT_PARSE_ERROR(trunc.b, "truncated");
  Bytes key_len;
  key_len.header(0, 1).put<uint64_t>(1000).zeros(20);
  EXPECT_PARSE_ERROR(key_len.b, "metadata key at offset 24 has length 1000, past the end");
  Bytes str_len;
  str_len.header(0, 1).str("k").put<uint32_t>(8).put<uint64_t>(1ull << 40).zeros(8);
  EXPECT_PARSE_ERROR(str_len.b, "string value at offset");
  Bytes bad_type;
  bad_type.header(0, 1).str("k").put<uint32_t>(13).zeros(8);
  EXPECT_PARSE_ERROR(bad_type.b, "key k has unknown value type 13");
  Bytes bad_elem;
  bad_elem.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(77).put<uint64_t>(1).zeros(8);
  EXPECT_PARSE_ERROR(bad_elem.b, "key k: array has unknown element type 77");
  Bytes arr_len;
  arr_len.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(4).put<uint64_t>(1000000).zeros(16);
  EXPECT_PARSE_ERROR(arr_len.b, "key k: array of 1000000 u32 elements does not fit");
  Bytes deep;
  deep.header(0, 1).str("k").put<uint32_t>(9);
  for (int d = 0; d < 20; ++d) deep.put<uint32_t>(9).put<uint64_t>(1);
  deep.put<uint32_t>(4).put<uint64_t>(0).zeros(8);
  EXPECT_PARSE_ERROR(deep.b, "arrays nested more than 8 deep");
  Bytes dup;
  dup.header(0, 2).kv_u32("a.b", 1).kv_u32("a.b", 2);
  EXPECT_PARSE_ERROR(dup.b, "duplicate metadata key a.b");
}

TEST(GgufMalformed, AlignmentProblems) {
  EXPECT_PARSE_ERROR(Bytes().header(0, 1).kv_u32("general.alignment", 0).b, "general.alignment 0 is not a nonzero power of two");
  EXPECT_PARSE_ERROR(Bytes().header(0, 1).kv_u32("general.alignment", 48).b, "general.alignment 48 is not");
  Bytes str;
  str.header(0, 1).str("general.alignment").put<uint32_t>(8).str("32");
  EXPECT_PARSE_ERROR(str.b, "general.alignment must be an integer");
  Bytes neg;
  neg.header(0, 1).str("general.alignment").put<uint32_t>(5).put<int32_t>(-32);
  EXPECT_PARSE_ERROR(neg.b, "general.alignment -32 is negative");
  EXPECT_EQ(parse_error(Bytes().header(0, 1).kv_u32("general.alignment", 64).b), "");
}

// A valid one-tensor file to mutate: tensor "w" F32 ne = [ne0, ne1] at `offset`.
Bytes one_tensor(std::vector<int64_t> ne, uint32_t type = 0, uint64_t offset = 0, size_t data = 256) {
  Bytes b;
  b.header(1, 0).tensor("w", std::move(ne), type, offset).pad_to(32).zeros(data);
  return b;
}

TEST(GgufMalformed, TensorInfoProblems) {
  EXPECT_EQ(parse_error(one_tensor({8, 8}).b), "");
  EXPECT_PARSE_ERROR(one_tensor({1, 1, 1, 1, 1}).b, "tensor w has 5 dimensions (must be 1 to 4)");
  EXPECT_PARSE_ERROR(one_tensor({}).b, "tensor w has 0 dimensions");
  EXPECT_PARSE_ERROR(one_tensor({8, -2}).b, "tensor w dimension 1 is -2 (must be positive)");
  EXPECT_PARSE_ERROR(one_tensor({0, 8}).b, "tensor w dimension 0 is 0");
  EXPECT_PARSE_ERROR(one_tensor({1ll << 40, 1ll << 40}).b, "tensor w: element count overflows 64 bits");
  EXPECT_PARSE_ERROR(one_tensor({1ll << 62, 1}).b, "tensor w: byte size overflows 64 bits");  // f32: 2^64 bytes
  EXPECT_PARSE_ERROR(one_tensor({8}, 4).b, "tensor w has unknown ggml type id 4");
  EXPECT_PARSE_ERROR(one_tensor({8}, 1000).b, "unknown ggml type id 1000");
  EXPECT_PARSE_ERROR(one_tensor({100}, 12).b, "row length 100 is not a multiple of the q4_k block size 256");
  Bytes trunc;
  trunc.header(1, 0).str("w").put<uint32_t>(2).put<int64_t>(8).put<int64_t>(8).zeros(5);
  EXPECT_PARSE_ERROR(trunc.b, "truncated: file ends at byte");
  Bytes name_len;
  name_len.header(1, 0).put<uint64_t>(5000).zeros(40);
  EXPECT_PARSE_ERROR(name_len.b, "tensor name at offset 24 has length 5000");
  Bytes dup;
  dup.header(2, 0).tensor("w", {8}, 0, 0).tensor("w", {8}, 0, 32).pad_to(32).zeros(64);
  EXPECT_PARSE_ERROR(dup.b, "duplicate tensor name w");
}

TEST(GgufMalformed, TensorDataProblems) {
  EXPECT_PARSE_ERROR(one_tensor({8, 8}, 0, 16).b, "tensor w offset 16 is not a multiple of the alignment 32");
  EXPECT_PARSE_ERROR(one_tensor({8, 8}, 0, 0, 100).b, "tensor w (256 bytes at data offset 0) lies past the end");
  EXPECT_PARSE_ERROR(one_tensor({8, 8}, 0, 1ull << 62).b, "lies past the end of the file");
  Bytes no_data;
  no_data.header(1, 0).tensor("w", {8}, 0, 0);
  EXPECT_PARSE_ERROR(no_data.b, "data section would start at byte");
  Bytes overlap;
  overlap.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).pad_to(32).zeros(128);
  EXPECT_PARSE_ERROR(overlap.b, "tensors a and b overlap");
  Bytes ok;
  ok.header(2, 0).tensor("a", {16}, 0, 64).tensor("b", {8}, 0, 0).pad_to(32).zeros(128);
  EXPECT_EQ(parse_error(ok.b), "");
}

TEST(GgufMalformed, EveryTruncationOfAValidFileFails) {
  GgufWriter w;
  w.set("general.architecture", GgufValue::make_string("llama"));
  w.set("a", GgufValue::make_array(GgufType::ARRAY, {GgufValue::make_array(GgufType::U16, {GgufValue::make_int(GgufType::U16, 3)})}));
  w.add_tensor("x", DType::Q8_0, {2, 32}, std::vector<uint8_t>(68, 1));
  std::vector<uint8_t> bytes = w.serialize();
  ASSERT_EQ(parse_error(bytes), "");
  for (size_t n = 0; n + 1 < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
    std::string msg = parse_error(cut);
    // 68 data bytes are padded to 96: cutting only that padding leaves a valid file.
    if (msg.empty()) {
      EXPECT_GE(n, bytes.size() - 28) << "cut at " << n;
      continue;
    }
    EXPECT_NE(msg.find("bad.gguf: "), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace og
