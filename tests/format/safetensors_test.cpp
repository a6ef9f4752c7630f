// safetensors reader/writer and HF checkpoint directories: round trips, sharded
// checkpoints, the real stories260K-hf, and one error per malformed case.
#include "format/safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "format/gguf.h"
#include "format/hf_config.h"
#include "temp_dir.h"

namespace og {
namespace {

namespace fs = std::filesystem;
const std::string kHf = std::string(OG_TESTDATA_DIR) + "/models/stories260K-hf";

std::string temp_dir(const std::string& name) {
  std::string d = og::test::temp_path("og_st_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A safetensors file from a raw header string and n data bytes.
std::vector<uint8_t> raw_file(const std::string& header, size_t data = 0) {
  std::vector<uint8_t> b(8 + header.size() + data, 0);
  uint64_t n = header.size();
  std::memcpy(b.data(), &n, 8);
  std::memcpy(b.data() + 8, header.data(), header.size());
  return b;
}

std::string parse_error(const std::vector<uint8_t>& b) {
  try {
    SafetensorsSource::parse(b.data(), b.size(), "bad.safetensors");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ST_ERROR(bytes, substr)                                    \
  do {                                                                    \
    std::string msg_ = parse_error(bytes);                                \
    EXPECT_NE(msg_.find("bad.safetensors: "), std::string::npos) << msg_; \
    EXPECT_NE(msg_.find(substr), std::string::npos) << msg_;              \
  } while (0)

std::vector<uint8_t> iota_bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> b(n);
  for (size_t k = 0; k < n; ++k) b[k] = static_cast<uint8_t>(k * 7 + seed);
  return b;
}

TEST(Safetensors, WriteReadRoundTrip) {
  std::string dir = temp_dir("rt");
  std::string path = dir + "/model.safetensors";
  std::vector<SafetensorsTensor> ts = {
      {"a.weight", "F32", {3, 4}, iota_bytes(48, 1), nullptr},
      {"b.weight", "F16", {5}, iota_bytes(10, 2), nullptr},
      {"c.weight", "BF16", {2, 2, 2}, {}, [] { return iota_bytes(16, 3); }},
      {"d.scale", "F8_E4M3", {4}, iota_bytes(4, 4), nullptr},
      {"e.empty", "F32", {0, 4}, {}, nullptr},
  };
  write_safetensors(path, ts);
  auto s = SafetensorsSource::open_file(path);
  ASSERT_EQ(s->tensors().size(), 5u);
  EXPECT_EQ(s->metadata().at("format"), "pt");
  const TensorInfo* a = s->find("a.weight");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(a->type_name, "F32");
  EXPECT_EQ(std::vector<uint8_t>(a->data, a->data + a->nbytes), iota_bytes(48, 1));
  TensorView v = tensor_view(*s, *s->find("c.weight"));
  EXPECT_EQ(v.dtype, DType::BF16);
  EXPECT_EQ(v.shape, (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(std::vector<uint8_t>(static_cast<const uint8_t*>(v.data), static_cast<const uint8_t*>(v.data) + 16),
            iota_bytes(16, 3));
  EXPECT_EQ(tensor_view(*s, *s->find("b.weight")).dtype, DType::F16);
  EXPECT_EQ(s->find("e.empty")->nbytes, 0u);
  try {
    tensor_view(*s, *s->find("d.scale"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor d.scale has type F8_E4M3"), std::string::npos) << e.what();
  }
  // open_dir finds model.safetensors.
  EXPECT_EQ(SafetensorsSource::open_dir(dir)->tensors().size(), 5u);
  EXPECT_THROW(write_safetensors(dir + "/x.safetensors", {{"x", "F32", {2}, {1, 2, 3}, nullptr}}), Error);
  EXPECT_THROW(write_safetensors(dir + "/x.safetensors", {{"x", "Q4", {2}, {}, nullptr}}), Error);
}

TEST(Safetensors, ShardedCheckpoint) {
  std::string dir = temp_dir("shard");
  write_safetensors(dir + "/model-00001-of-00002.safetensors",
                    {{"x.weight", "F32", {2}, iota_bytes(8, 1), nullptr}, {"y.weight", "F32", {1}, iota_bytes(4, 2), nullptr}});
  write_safetensors(dir + "/model-00002-of-00002.safetensors", {{"z.weight", "F16", {4}, iota_bytes(8, 3), nullptr}});
  write_text(dir + "/model.safetensors.index.json", R"({"metadata": {"total_size": 20}, "weight_map": {
      "x.weight": "model-00001-of-00002.safetensors", "y.weight": "model-00001-of-00002.safetensors",
      "z.weight": "model-00002-of-00002.safetensors"}})");
  auto s = SafetensorsSource::open_dir(dir);
  EXPECT_EQ(s->source_name(), dir);
  ASSERT_EQ(s->tensors().size(), 3u);
  EXPECT_EQ(s->find("z.weight")->type_name, "F16");
  EXPECT_EQ(s->find("y.weight")->data[0], 2);

  // A tensor the index places in the wrong shard.
  write_text(dir + "/model.safetensors.index.json", R"({"weight_map": {
      "x.weight": "model-00002-of-00002.safetensors", "z.weight": "model-00002-of-00002.safetensors"}})");
  try {
    SafetensorsSource::open_dir(dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor x.weight is not in its shard model-00002-of-00002"), std::string::npos)
        << e.what();
  }
  // A missing shard.
  write_text(dir + "/model.safetensors.index.json", R"({"weight_map": {"x.weight": "model-00009.safetensors"}})");
  try {
    SafetensorsSource::open_dir(dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard model-00009.safetensors is missing"), std::string::npos) << e.what();
  }
  // Path escapes and ill-typed maps.
  write_text(dir + "/model.safetensors.index.json", R"({"weight_map": {"x.weight": "../evil.safetensors"}})");
  EXPECT_THROW(SafetensorsSource::open_dir(dir), Error);
  write_text(dir + "/model.safetensors.index.json", R"({"weight_map": ["x"]})");
  try {
    SafetensorsSource::open_dir(dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("weight_map must be an object"), std::string::npos) << e.what();
  }
  write_text(dir + "/model.safetensors.index.json", R"({"weight_map": {"x.weight": 3}})");
  EXPECT_THROW(SafetensorsSource::open_dir(dir), Error);
  // The same tensor in two shards.
  write_safetensors(dir + "/model-00002-of-00002.safetensors", {{"x.weight", "F32", {2}, iota_bytes(8, 3), nullptr}});
  write_text(dir + "/model.safetensors.index.json", R"({"weight_map": {
      "x.weight": "model-00001-of-00002.safetensors", "y.weight": "model-00002-of-00002.safetensors"}})");
  try {
    SafetensorsSource::open_dir(dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("appears in more than one shard"), std::string::npos) << e.what();
  }
  std::string empty = temp_dir("empty");
  EXPECT_THROW(SafetensorsSource::open_dir(empty), Error);
}

TEST(Safetensors, ReadsStories260KHf) {
  HfCheckpoint c = HfCheckpoint::open(kHf);
  EXPECT_EQ(*json_int(c.config, "hidden_size", "config.json"), 64);
  EXPECT_EQ(*json_int(c.config, "num_key_value_heads", "config.json"), 4);
  EXPECT_EQ(*json_number(c.config, "rope_theta", "config.json"), 10000.0);
  EXPECT_EQ(*json_bool(c.config, "tie_word_embeddings", "config.json"), true);
  EXPECT_EQ(*json_string(c.config, "model_type", "config.json"), "llama");
  EXPECT_FALSE(json_string(c.config, "rope_scaling", "config.json").has_value());  // null = absent
  EXPECT_THROW(json_int(c.config, "model_type", "config.json"), Error);
  ASSERT_TRUE(c.generation_config.has_value());
  EXPECT_EQ(*json_int(*c.generation_config, "eos_token_id", "generation_config.json"), 2);
  ASSERT_TRUE(c.tokenizer_config.has_value());
  EXPECT_FALSE(c.tokenizer_json_path.empty());
  EXPECT_TRUE(c.tokenizer_model_path.empty());
  ASSERT_TRUE(c.weights);
  ASSERT_EQ(c.weights->tensors().size(), 47u);
  const TensorInfo* q = c.weights->find("model.layers.0.self_attn.k_proj.weight");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(c.weights->find("model.embed_tokens.weight")->shape, (std::vector<int64_t>{512, 64}));
  EXPECT_FALSE(c.weights->find("lm_head.weight"));
  // The HF weights equal the GGUF ones for tensors the converter does not permute.
  auto g = GgufFile::open(std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf");
  const TensorInfo* hv = c.weights->find("model.layers.3.self_attn.v_proj.weight");
  const TensorInfo* gv = g->find("blk.3.attn_v.weight");
  ASSERT_EQ(hv->nbytes, gv->nbytes);
  EXPECT_EQ(std::memcmp(hv->data, gv->data, hv->nbytes), 0);
  HfCheckpoint no_weights = HfCheckpoint::open(kHf, false);
  EXPECT_FALSE(no_weights.weights);
}

// HfCheckpoint::open's error text ("" when it opened).
std::string open_error(const std::string& dir, bool need_weights = true) {
  try {
    HfCheckpoint::open(dir, need_weights);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, HfDirectoryProblems) {
  EXPECT_NE(open_error("/nonexistent/dir").find("/nonexistent/dir: no such file"), std::string::npos);
  std::string dir = temp_dir("hfbad");
  EXPECT_NE(open_error(dir).find("no config.json"), std::string::npos) << open_error(dir);
  write_text(dir + "/config.json", "[1, 2]");
  EXPECT_NE(open_error(dir).find("config.json: expected a JSON object"), std::string::npos) << open_error(dir);
  write_text(dir + "/config.json", "{\"hidden_size\": ");
  EXPECT_NE(open_error(dir).find("config.json: not valid JSON"), std::string::npos) << open_error(dir);
  write_text(dir + "/config.json", "{\"hidden_size\": 64.0, \"x\": 1.5, \"b\": 1}");
  write_text(dir + "/generation_config.json", "nope");
  EXPECT_NE(open_error(dir, false).find("generation_config.json: not valid JSON"), std::string::npos)
      << open_error(dir, false);
  fs::remove(dir + "/generation_config.json");
  HfCheckpoint c = HfCheckpoint::open(dir, false);
  EXPECT_EQ(*json_int(c.config, "hidden_size", "config.json"), 64);
  try {
    json_int(c.config, "x", "config.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "config.json: x must be an integer, got 1.5");
  }
  EXPECT_THROW(json_bool(c.config, "b", "config.json"), Error);
  EXPECT_THROW(json_number(c.config, "missing_is_fine", "config.json").value(), std::bad_optional_access);
  EXPECT_THROW(HfCheckpoint::open(dir, true), Error);  // no weights
  EXPECT_THROW(HfCheckpoint::open(kHf + "/config.json"), Error);  // a file, not a directory
}

TEST(SafetensorsMalformed, EachProblemItsOwnError) {
  EXPECT_ST_ERROR(std::vector<uint8_t>(5, 0), "too small to be a safetensors file");
  std::vector<uint8_t> long_header = raw_file("{}");
  long_header[0] = 200;
  EXPECT_ST_ERROR(long_header, "header length 200 is past the end");
  std::vector<uint8_t> huge = raw_file("{}");
  huge[7] = 0xff;
  EXPECT_ST_ERROR(huge, "is past the end of the file");
  EXPECT_ST_ERROR(raw_file("{not json"), "header is not valid JSON");
  EXPECT_ST_ERROR(raw_file("[1,2]"), "header is not a JSON object");
  EXPECT_ST_ERROR(raw_file(R"({"__metadata__": [1]})"), "__metadata__ must be an object of strings");
  EXPECT_ST_ERROR(raw_file(R"({"__metadata__": {"a": 1}})"), "__metadata__ value a must be a string");
  EXPECT_ST_ERROR(raw_file(R"({"t": 5})"), "tensor t: entry must be an object");
  EXPECT_ST_ERROR(raw_file(R"({"t": {"shape": [1], "data_offsets": [0, 4]}})", 4), "tensor t: dtype must be a string");
  EXPECT_ST_ERROR(raw_file(R"({"t": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 4]}})", 4),
                  "tensor t: unknown dtype Q4");
  EXPECT_ST_ERROR(raw_file(R"({"t": {"dtype": "F32", "shape": 1, "data_offsets": [0, 4]}})", 4),
                  "tensor t: shape must be an array");
  EXPECT_ST_ERROR(raw_file(R"({"t": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4),
                  "tensor t: shape must hold non-negative integers");
  EXPECT_ST_ERROR(raw_file(R"({"t": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", 4),
                  "shape must hold non-negative integers");
  EXPECT_ST_ERROR(raw_file(R"({"t": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})", 4),
                  "tensor t: shape overflows 64 bits");
  EXPECT_ST_ERROR(raw_file(R"({"t": {"dtype": "F64", "shape": [4611686018427387904], "data_offsets": [0, 4]}})", 4),
                  "tensor t: byte size overflows 64 bits");
  EXPECT_ST_ERROR(raw_file(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 4),
                  "tensor t: data_offsets must be [begin, end] non-negative integers");
  EXPECT_ST_ERROR(raw_file(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": "0-4"}})", 4),
                  "data_offsets must be [begin, end]");
  EXPECT_ST_ERROR(raw_file(R"({"t": {"dtype": "F32", "shape": [1]}})", 4), "data_offsets must be [begin, end]");
  EXPECT_ST_ERROR(raw_file(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})", 8),
                  "tensor t: data_offsets begin 8 is after end 4");
  EXPECT_ST_ERROR(raw_file(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 3),
                  "tensor t: data_offsets [0, 4) run past the end of the data (3 bytes)");
  EXPECT_ST_ERROR(raw_file(R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", 8),
                  "tensor t: data_offsets span 4 bytes but shape [2] of F32 needs 8");
  EXPECT_ST_ERROR(raw_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                              "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8),
                  "tensors a and b overlap");
  EXPECT_EQ(parse_error(raw_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
                                    "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 8)),
            "");
}

TEST(SafetensorsMalformed, EveryTruncationFails) {
  std::string dir = temp_dir("trunc");
  write_safetensors(dir + "/m.safetensors", {{"w", "F32", {4}, iota_bytes(16, 1), nullptr}});
  std::string text = read_text_file(dir + "/m.safetensors");
  std::vector<uint8_t> bytes(text.begin(), text.end());
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::string msg = parse_error(std::vector<uint8_t>(bytes.begin(), bytes.begin() + n));
    EXPECT_NE(msg.find("bad.safetensors: "), std::string::npos) << n << ": " << msg;
  }
}

}  // namespace
}  // namespace og
