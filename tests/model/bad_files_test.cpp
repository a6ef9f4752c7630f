// Bad model files: each defect (missing tensor or key, wrong shape,
// contradicting hyper-parameters, unsupported RoPE scaling, dtype or field,
// unknown architecture) is one clear og::Error naming what is wrong.
#include <gtest/gtest.h>

#include "file_edit.h"
#include "model/model.h"
#include "model_test_util.h"

namespace og {
namespace {

const std::string kGguf = std::string(OG_TESTDATA_DIR) + "/models/stories260K/stories260K.gguf";
const std::string kHf = std::string(OG_TESTDATA_DIR) + "/models/stories260K-hf";

// Loads `path` and returns the error text ("" if it loaded).
std::string load_error(const std::string& path) {
  try {
    Model::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string gguf_error(const test::GgufEdit& e) {
  test::TempDir dir;
  test::rewrite_gguf(kGguf, dir.path("m.gguf"), e);
  return load_error(dir.path("m.gguf"));
}

std::string hf_error(const test::HfEdit& e) {
  test::TempDir dir;
  test::rewrite_hf(kHf, dir.path("hf"), e);
  return load_error(dir.path("hf"));
}

#define EXPECT_ERROR_HAS(msg, part) \
  EXPECT_NE((msg).find(part), std::string::npos) << "error was: '" << (msg) << "', expected it to mention: " << (part)

TEST(BadGguf, UnchangedCopyLoads) { EXPECT_EQ(gguf_error({}), ""); }

TEST(BadGguf, MissingTensor) {
  test::GgufEdit e;
  e.drop_tensors = {"blk.2.ffn_up.weight"};
  EXPECT_ERROR_HAS(gguf_error(e), "missing tensor blk.2.ffn_up.weight");
}

TEST(BadGguf, WrongShape) {
  test::GgufEdit e;
  e.replace = [](const TensorInfo& t, GgufWriter& w) {
    if (t.name != "blk.1.attn_k.weight") return false;
    w.add_tensor(t.name, DType::F32, {30, 64}, test::f32_bytes(std::vector<float>(30 * 64, 0.1f)));
    return true;
  };
  const std::string msg = gguf_error(e);
  EXPECT_ERROR_HAS(msg, "blk.1.attn_k.weight has shape [30, 64], expected [32, 64]");
}

TEST(BadGguf, KvHeadsDoNotDivideHeads) {
  test::GgufEdit e;
  e.set_keys = {{"llama.attention.head_count_kv", GgufValue::make_u32(3)}};
  EXPECT_ERROR_HAS(gguf_error(e), "llama.attention.head_count_kv 3 does not divide llama.attention.head_count 8");
}

TEST(BadGguf, HeadsDoNotDivideEmbedding) {
  test::GgufEdit e;
  e.set_keys = {{"llama.attention.head_count", GgufValue::make_u32(7)},
                {"llama.attention.head_count_kv", GgufValue::make_u32(7)}};
  EXPECT_ERROR_HAS(gguf_error(e), "embedding_length 64 is not divisible by llama.attention.head_count 7");
}

TEST(BadGguf, VocabSizeContradictsEmbedding) {
  test::GgufEdit e;
  e.set_keys = {{"llama.vocab_size", GgufValue::make_u32(600)}};
  EXPECT_ERROR_HAS(gguf_error(e), "vocabulary size 600 contradicts the embedding rows of token_embd.weight");
}

TEST(BadGguf, RopeDimensionCountIsReportedAsWritten) {
  test::GgufEdit e;
  e.set_keys = {{"llama.rope.dimension_count", GgufValue::make_u32(4000000000u)}};
  EXPECT_ERROR_HAS(gguf_error(e), "llama.rope.dimension_count 4000000000 must be even and at most the key length 8");
  e.set_keys = {{"llama.rope.dimension_count", GgufValue::make_u32(5)}};
  EXPECT_ERROR_HAS(gguf_error(e), "llama.rope.dimension_count 5 must be even");
}

TEST(BadGguf, PerLayerArrayOfTheWrongLength) {
  test::GgufEdit e;
  std::vector<GgufValue> ff(3, GgufValue::make_u32(172));
  e.set_keys = {{"llama.feed_forward_length", GgufValue::make_array(GgufType::U32, ff)}};
  EXPECT_ERROR_HAS(gguf_error(e), "llama.feed_forward_length has 3 entries, expected one per layer (5)");
}

TEST(BadGguf, MissingRequiredKey) {
  test::GgufEdit e;
  e.drop_keys = {"llama.block_count"};
  EXPECT_ERROR_HAS(gguf_error(e), "missing required key llama.block_count");
}

TEST(BadGguf, UnsupportedRopeScaling) {
  test::GgufEdit e;
  e.set_keys = {{"llama.rope.scaling.type", GgufValue::make_string("dynamic")},
                {"llama.rope.scaling.factor", GgufValue::make_f32(4)}};
  EXPECT_ERROR_HAS(gguf_error(e), "llama.rope.scaling.type 'dynamic' is not supported");
  // yarn is read (gpt-oss; any arch, as llama.cpp) but needs its original context.
  e.set_keys[0].second = GgufValue::make_string("yarn");
  EXPECT_ERROR_HAS(gguf_error(e), "yarn scaling needs llama.rope.scaling.original_context_length");
}

TEST(BadGguf, UnknownArchitecture) {
  test::GgufEdit e;
  e.set_keys = {{"general.architecture", GgufValue::make_string("mamba")}};
  EXPECT_ERROR_HAS(gguf_error(e), "general.architecture 'mamba' is not supported");
}

TEST(BadGguf, SoftcappingMoeAndChunkedAttentionAreRefused) {
  const std::pair<const char*, GgufValue> cases[] = {
      {"llama.final_logit_softcapping", GgufValue::make_f32(30)},
      {"llama.attn_logit_softcapping", GgufValue::make_f32(50)},
      {"llama.expert_count", GgufValue::make_u32(8)},
      {"llama.attention.chunk_size", GgufValue::make_u32(8192)},
  };
  for (const auto& [key, value] : cases) {
    test::GgufEdit e;
    e.set_keys = {{key, value}};
    EXPECT_ERROR_HAS(gguf_error(e), key);
  }
}

TEST(BadGguf, UnsupportedTensorDtypeNamesTensorAndType) {
  test::GgufEdit e;
  e.replace = [](const TensorInfo& t, GgufWriter& w) {
    if (t.name != "blk.0.ffn_gate.weight") return false;
    // q8_1: 32-element blocks of 36 bytes, an activation format with no weight kernels.
    w.add_tensor(t.name, DType::Q8_1, {172, 64}, std::vector<uint8_t>(172 * 2 * 36, 0));
    return true;
  };
  const std::string msg = gguf_error(e);
  EXPECT_ERROR_HAS(msg, "blk.0.ffn_gate.weight");
  EXPECT_ERROR_HAS(msg, "q8_1");
}

TEST(BadGguf, FusedQkvIsRefused) {
  test::GgufEdit e;
  e.add = [](GgufWriter& w) {
    w.add_tensor("blk.0.attn_qkv.weight", DType::F32, {128, 64}, test::f32_bytes(std::vector<float>(128 * 64)));
  };
  EXPECT_ERROR_HAS(gguf_error(e), "fused tensor blk.0.attn_qkv.weight is not supported");
}

TEST(BadGguf, NotAModelFile) {
  test::TempDir dir;
  std::ofstream(dir.path("x.gguf")) << "this is not a gguf file at all";
  EXPECT_NE(load_error(dir.path("x.gguf")), "");
  EXPECT_ERROR_HAS(load_error(dir.path("nothing-here.gguf")), "no such file or directory");
}

// A vocabulary-only GGUF (as tokenizer tests use) says so instead of naming the
// first tensor it lacks.
TEST(BadGguf, VocabularyOnlyFile) {
  test::GgufEdit e;
  std::unique_ptr<GgufFile> f = GgufFile::open(kGguf);
  for (const TensorInfo& t : f->tensors()) e.drop_tensors.insert(t.name);
  EXPECT_ERROR_HAS(gguf_error(e), "holds no tensors (a vocabulary-only file?)");
  const std::string real = std::string(OG_TESTDATA_DIR) + "/vocab/ggml-vocab-llama-spm.gguf";
  EXPECT_ERROR_HAS(load_error(real), "holds no tensors (a vocabulary-only file?)");
}

TEST(BadHf, UnchangedCopyLoads) { EXPECT_EQ(hf_error({}), ""); }

TEST(BadHf, UnsupportedRopeScaling) {
  test::HfEdit e;
  e.config = [](nlohmann::json& c) { c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}}; };
  EXPECT_ERROR_HAS(hf_error(e), "rope_scaling: yarn scaling needs original_max_position_embeddings");
  e.config = [](nlohmann::json& c) {
    c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 512},
                         {"mscale", 0.7}};
  };
  EXPECT_ERROR_HAS(hf_error(e), "rope_scaling.mscale = 0.7 is not supported");
  e.config = [](nlohmann::json& c) { c["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}}; };
  EXPECT_ERROR_HAS(hf_error(e), "rope_scaling.rope_type 'dynamic' is not supported");
  e.config = [](nlohmann::json& c) {
    c.erase("rope_scaling");
    c["rope_parameters"] = {{"rope_type", "longrope"}, {"rope_theta", 10000.0}};  // Phi-3's, without its factors
  };
  EXPECT_ERROR_HAS(hf_error(e), "rope_parameters.short_factor must be a list of numbers");
}

TEST(BadHf, UnknownArchitecture) {
  test::HfEdit e;
  e.config = [](nlohmann::json& c) { c["architectures"] = {"MambaForCausalLM"}; };
  EXPECT_ERROR_HAS(hf_error(e), "architecture 'MambaForCausalLM' is not supported");
}

TEST(BadHf, UntiedWithoutLmHead) {
  test::HfEdit e;
  e.config = [](nlohmann::json& c) { c["tie_word_embeddings"] = false; };
  EXPECT_ERROR_HAS(hf_error(e), "missing tensor lm_head.weight");
}

TEST(BadHf, MissingTensor) {
  test::HfEdit e;
  e.drop_tensors = {"model.layers.3.self_attn.v_proj.weight"};
  EXPECT_ERROR_HAS(hf_error(e), "missing tensor model.layers.3.self_attn.v_proj.weight");
}

TEST(BadHf, ContradictingHyperParameters) {
  test::HfEdit e;
  e.config = [](nlohmann::json& c) { c["num_key_value_heads"] = 3; };
  EXPECT_ERROR_HAS(hf_error(e), "num_key_value_heads 3 does not divide num_attention_heads 8");
  e.config = [](nlohmann::json& c) { c["vocab_size"] = 1000; };
  EXPECT_ERROR_HAS(hf_error(e), "vocabulary size 1000 contradicts the embedding rows");
  e.config = [](nlohmann::json& c) { c["intermediate_size"] = 100; };
  EXPECT_ERROR_HAS(hf_error(e), "model.layers.0.mlp.gate_proj.weight has shape [172, 64], expected [100, 64]");
  e.config = [](nlohmann::json& c) { c.erase("hidden_size"); };
  EXPECT_ERROR_HAS(hf_error(e), "missing required field hidden_size");
  e.config = [](nlohmann::json& c) { c["rms_norm_eps"] = 1e30; };
  EXPECT_ERROR_HAS(hf_error(e), "RMSNorm epsilon must be in (0, 1), got 1e+30");
  e.config = [](nlohmann::json& c) { c["rms_norm_eps"] = -1e-5; };
  EXPECT_ERROR_HAS(hf_error(e), "RMSNorm epsilon must be in (0, 1)");
}

TEST(BadHf, UnsupportedFieldsAreNamed) {
  const std::pair<const char*, nlohmann::json> cases[] = {
      {"attn_logit_softcapping", 50.0}, {"final_logit_softcapping", 30.0}, {"attention_chunk_size", 8192},
      {"num_local_experts", 8},         {"mlp_bias", true},                {"partial_rotary_factor", 0.5},
  };
  for (const auto& [key, value] : cases) {
    test::HfEdit e;
    e.config = [key = std::string(key), value = value](nlohmann::json& c) { c[key] = value; };
    EXPECT_ERROR_HAS(hf_error(e), key);
  }
  test::HfEdit e;
  e.config = [](nlohmann::json& c) { c["hidden_act"] = "relu"; };
  EXPECT_ERROR_HAS(hf_error(e), "hidden_act 'relu' is not supported");
  e.config = [](nlohmann::json& c) { c["layer_types"] = std::vector<std::string>(5, "chunked_attention"); };
  EXPECT_ERROR_HAS(hf_error(e), "layer_types entry 'chunked_attention' is not supported");
}

// The loader reads config.json through the same accessors as every other HF
// reader: an integral float (2048.0, as some writers emit) is an integer, a
// fraction, a boolean or a string is not, and the message shows the value.
TEST(BadHf, IntegersWrittenAsFloatsLoadOthersAreNamed) {
  test::HfEdit e;
  e.config = [](nlohmann::json& c) {
    c["max_position_embeddings"] = 2048.0;
    c["hidden_size"] = 64.0;
    c["num_key_value_heads"] = 4.0;
  };
  EXPECT_EQ(hf_error(e), "");
  e.config = [](nlohmann::json& c) { c["max_position_embeddings"] = 2048.5; };
  EXPECT_ERROR_HAS(hf_error(e), "config.json: max_position_embeddings must be an integer, got 2048.5");
  e.config = [](nlohmann::json& c) { c["num_hidden_layers"] = true; };
  EXPECT_ERROR_HAS(hf_error(e), "num_hidden_layers must be an integer, got true");
  e.config = [](nlohmann::json& c) { c["hidden_size"] = "64"; };
  EXPECT_ERROR_HAS(hf_error(e), "hidden_size must be an integer, got \"64\"");
  e.config = [](nlohmann::json& c) { c["rope_theta"] = "1e4"; };
  EXPECT_ERROR_HAS(hf_error(e), "rope_theta must be a number, got \"1e4\"");
}

TEST(BadHf, NullFieldsMeanAbsent) {
  test::HfEdit e;
  e.config = [](nlohmann::json& c) {
    c["attn_logit_softcapping"] = nullptr;
    c["final_logit_softcapping"] = nullptr;
    c["rope_scaling"] = nullptr;
    c["head_dim"] = nullptr;
  };
  EXPECT_EQ(hf_error(e), "");
}

}  // namespace
}  // namespace og
