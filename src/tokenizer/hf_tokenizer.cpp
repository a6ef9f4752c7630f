// Hugging Face tokenizer.json -> PipelineSpec: BPE model, normalizers,
// pre-tokenizers, added tokens, post-processor and decoders. Anything else is
// an og::Error naming the component.
#include <nlohmann/json.hpp>

#include <algorithm>

#include "base/error.h"
#include "base/mapped_file.h"
#include "tokenizer/bpe_presets.h"
#include "tokenizer/loaders.h"

namespace og::tok {

using nlohmann::json;

namespace {

struct Ctx {
  std::string name;  // source, for messages
  PipelineSpec* spec;
};

// A token id: a JSON integer in [0, 2^24) (a float, even a whole one, or a
// huge number is an error naming `what`, never a narrowing conversion).
int32_t token_id(const json& v, const Ctx& c, const std::string& what) {
  OG_CHECK(v.is_number_integer(), c.name, ": ", what, " is not an integer id (", v.dump(), ")");
  const bool in_range = v.is_number_unsigned() ? v.get<uint64_t>() < (1u << 24)
                                               : v.get<int64_t>() >= 0 && v.get<int64_t>() < (1 << 24);
  OG_CHECK(in_range, c.name, ": ", what, " has a bad id ", v.dump(), " (ids are 0 to 16777215)");
  return static_cast<int32_t>(v.get<int64_t>());
}

std::string type_of(const json& j, const Ctx& c, const char* what) {
  OG_CHECK(j.is_object() && j.contains("type") && j["type"].is_string(), c.name, ": ", what, " without a type");
  return j["type"].get<std::string>();
}

// {"String": s} -> literal regex; {"Regex": r} -> r.
std::shared_ptr<Regex> pattern_regex(const json& p, const Ctx& c, const char* what) {
  OG_CHECK(p.is_object(), c.name, ": ", what, " pattern is not an object");
  if (p.contains("Regex")) return std::make_shared<Regex>(p["Regex"].get<std::string>());
  if (p.contains("String")) return std::make_shared<Regex>(regex_escape(p["String"].get<std::string>()));
  fail(c.name, ": ", what, " pattern is neither String nor Regex");
}

void parse_normalizer(const json& j, Ctx& c) {
  if (j.is_null()) return;
  const std::string t = type_of(j, c, "normalizer");
  NormalizerStep st;
  if (t == "Sequence") {
    for (const json& n : j.at("normalizers")) parse_normalizer(n, c);
    return;
  }
  if (t == "NFC" || t == "NFD" || t == "NFKC" || t == "NFKD") {
    st.kind = NormalizerStep::Kind::kUnicode;
    st.form = t == "NFC" ? NormForm::kNfc : t == "NFD" ? NormForm::kNfd : t == "NFKC" ? NormForm::kNfkc : NormForm::kNfkd;
  } else if (t == "Lowercase") {
    st.kind = NormalizerStep::Kind::kLowercase;
  } else if (t == "Prepend") {
    st.kind = NormalizerStep::Kind::kPrepend;
    st.a = j.at("prepend").get<std::string>();
  } else if (t == "Replace") {
    st.kind = NormalizerStep::Kind::kReplace;
    const json& p = j.at("pattern");
    if (p.contains("String")) {
      st.a = p["String"].get<std::string>();
    } else {
      st.regex = pattern_regex(p, c, "Replace normalizer");
    }
    st.b = j.at("content").get<std::string>();
  } else if (t == "Strip") {
    st.kind = NormalizerStep::Kind::kStrip;
    st.left = j.value("strip_left", true);
    st.right = j.value("strip_right", true);
  } else {
    fail(c.name, ": unsupported normalizer type '", t, "'");
  }
  c.spec->normalizers.push_back(std::move(st));
}

PreTokStep::Prepend prepend_scheme(const json& j, const Ctx& c) {
  if (j.contains("prepend_scheme")) {
    const std::string s = j["prepend_scheme"].get<std::string>();
    if (s == "always") return PreTokStep::Prepend::kAlways;
    if (s == "first") return PreTokStep::Prepend::kFirst;
    if (s == "never") return PreTokStep::Prepend::kNever;
    fail(c.name, ": unsupported Metaspace prepend_scheme '", s, "'");
  }
  return j.value("add_prefix_space", true) ? PreTokStep::Prepend::kAlways : PreTokStep::Prepend::kNever;
}

void parse_pre_tokenizer(const json& j, Ctx& c) {
  if (j.is_null()) return;
  const std::string t = type_of(j, c, "pre_tokenizer");
  PreTokStep st;
  if (t == "Sequence") {
    for (const json& p : j.at("pretokenizers")) parse_pre_tokenizer(p, c);
    return;
  }
  if (t == "Split") {
    st.regex = pattern_regex(j.at("pattern"), c, "Split pre-tokenizer");
    st.behavior = parse_split_behavior(j.value("behavior", std::string("Isolated")));
    st.invert = j.value("invert", false);
  } else if (t == "ByteLevel") {
    st.kind = PreTokStep::Kind::kByteLevel;
    st.add_prefix_space = j.value("add_prefix_space", true);
    if (j.value("use_regex", true)) st.regex = std::make_shared<Regex>(kGpt2Regex);
    c.spec->bpe.byte_level = true;
  } else if (t == "Metaspace") {
    st.kind = PreTokStep::Kind::kMetaspace;
    st.replacement = j.value("replacement", std::string("\xE2\x96\x81"));
    st.prepend = prepend_scheme(j, c);
    st.split = j.value("split", true);
    st.behavior = SplitBehavior::kMergedWithNext;
    st.regex = std::make_shared<Regex>(regex_escape(st.replacement));
  } else if (t == "Digits") {
    st.regex = std::make_shared<Regex>(j.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
  } else if (t == "Punctuation") {
    st.regex = std::make_shared<Regex>(R"([\p{P}!-/:-@\[-`{-~])");
    st.behavior = parse_split_behavior(j.value("behavior", std::string("Isolated")));
  } else if (t == "Whitespace") {
    st.regex = std::make_shared<Regex>(R"(\w+|[^\w\s]+)");
    st.behavior = SplitBehavior::kRemoved;
    st.invert = true;
  } else if (t == "WhitespaceSplit") {
    st.regex = std::make_shared<Regex>(R"(\S+)");
    st.behavior = SplitBehavior::kRemoved;
    st.invert = true;
  } else {
    fail(c.name, ": unsupported pre_tokenizer type '", t, "'");
  }
  c.spec->pre.push_back(std::move(st));
}

void parse_decoder(const json& j, Ctx& c) {
  if (j.is_null()) return;
  const std::string t = type_of(j, c, "decoder");
  PipelineSpec& s = *c.spec;
  if (t == "Sequence") {
    for (const json& d : j.at("decoders")) parse_decoder(d, c);
  } else if (t == "ByteLevel") {
    s.dec_byte_level = true;
  } else if (t == "ByteFallback") {
    s.dec_byte_fallback = true;
  } else if (t == "Fuse") {
  } else if (t == "Replace") {
    const json& p = j.at("pattern");
    OG_CHECK(p.contains("String"), c.name, ": unsupported decoder Replace with a regex pattern");
    s.dec_replace.emplace_back(p["String"].get<std::string>(), j.at("content").get<std::string>());
  } else if (t == "Strip") {
    const std::string content = j.value("content", std::string(" "));
    const auto count = [&](const char* key) {
      if (!j.contains(key)) return 0;
      const json& v = j[key];
      const bool ok = v.is_number_unsigned()  ? v.get<uint64_t>() < 1024
                      : v.is_number_integer() ? v.get<int64_t>() >= 0 && v.get<int64_t>() < 1024
                                              : false;
      OG_CHECK(ok, c.name, ": decoder Strip ", key, " is not a count in [0, 1024) (", v.dump(), ")");
      return static_cast<int>(v.get<int64_t>());
    };
    const int start = count("start"), stop = count("stop");
    if (start == 0 && stop == 0) return;
    OG_CHECK(content == " " && start == 1 && stop == 0, c.name, ": unsupported decoder Strip(content '", content,
             "', start ", start, ", stop ", stop, ")");
    s.dec_strip_leading_space = true;
  } else if (t == "Metaspace") {
    s.dec_replace.emplace_back(j.value("replacement", std::string("\xE2\x96\x81")), " ");
    if (prepend_scheme(j, c) != PreTokStep::Prepend::kNever) s.dec_strip_leading_space = true;
  } else {
    fail(c.name, ": unsupported decoder type '", t, "'");
  }
}

int32_t id_of(const json& tokens_map, const std::string& name, const Ctx& c) {
  OG_CHECK(tokens_map.contains(name), c.name, ": post_processor names unknown special token '", name, "'");
  const json& ids = tokens_map[name].at("ids");
  OG_CHECK(ids.is_array() && ids.size() == 1, c.name, ": post_processor special token '", name, "' must have one id");
  return token_id(ids[0], c, "post_processor special token '" + name + "'");
}

void parse_post_processor(const json& j, Ctx& c) {
  if (j.is_null()) return;
  const std::string t = type_of(j, c, "post_processor");
  PipelineSpec& s = *c.spec;
  if (t == "Sequence") {
    for (const json& p : j.at("processors")) parse_post_processor(p, c);
  } else if (t == "ByteLevel") {
  } else if (t == "TemplateProcessing") {
    s.prefix_ids.clear();
    s.suffix_ids.clear();
    bool seen_a = false;
    for (const json& item : j.at("single")) {
      if (item.contains("Sequence")) {
        seen_a = true;
      } else if (item.contains("SpecialToken")) {
        const int32_t id = id_of(j.at("special_tokens"), item["SpecialToken"].at("id").get<std::string>(), c);
        (seen_a ? s.suffix_ids : s.prefix_ids).push_back(id);
      } else {
        fail(c.name, ": TemplateProcessing item is neither Sequence nor SpecialToken");
      }
    }
  } else if (t == "RobertaProcessing" || t == "BertProcessing") {
    s.prefix_ids = {token_id(j.at("cls").at(1), c, "post_processor cls")};
    s.suffix_ids = {token_id(j.at("sep").at(1), c, "post_processor sep")};
  } else {
    fail(c.name, ": unsupported post_processor type '", t, "'");
  }
}

void parse_merges(const json& merges, Ctx& c) {
  PipelineSpec& s = *c.spec;
  s.merges.reserve(merges.size());
  for (const json& m : merges) {
    std::string a, b;
    if (m.is_string()) {
      const std::string& str = m.get_ref<const std::string&>();
      const size_t sp = str.find(' ', 1);
      OG_CHECK(sp != std::string::npos, c.name, ": merge '", str, "' is not 'left right'");
      a = str.substr(0, sp);
      b = str.substr(sp + 1);
    } else {
      OG_CHECK(m.is_array() && m.size() == 2, c.name, ": a merge is neither \"a b\" nor [\"a\", \"b\"]");
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    }
    s.merges.emplace_back(s.vocab.find(a), s.vocab.find(b));
  }
}

// WordPiece (BERT): the pieces are kept as GGUF "bert" vocabularies hold
// them (what WpmModel matches, and what llama.cpp's converter writes):
// continuations lose their "##", word-initial pieces gain U+2581, and
// bracketed names ([CLS], [unused0]) stay as they are.
void parse_wordpiece_model(const json& m, Ctx& c) {
  PipelineSpec& s = *c.spec;
  const json& cp = m.value("continuing_subword_prefix", json());
  const std::string prefix = cp.is_string() ? cp.get<std::string>() : "##";
  OG_CHECK(!prefix.empty(), c.name, ": WordPiece continuing_subword_prefix is empty");
  const json& vocab = m.at("vocab");
  OG_CHECK(vocab.is_object() && !vocab.empty(), c.name, ": model.vocab is missing or empty");
  int32_t max_id = 0;
  for (auto it = vocab.begin(); it != vocab.end(); ++it)
    max_id = std::max(max_id, token_id(it.value(), c, "model.vocab '" + it.key() + "'"));
  Vocab::check_span(static_cast<size_t>(max_id) + 1, vocab.size(), c.name);
  s.vocab.pieces.resize(static_cast<size_t>(max_id) + 1);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const std::string& p = it.key();
    std::string piece;
    if (p.size() >= 2 && p.front() == '[' && p.back() == ']') piece = p;
    else if (p.rfind(prefix, 0) == 0 && p.size() > prefix.size()) piece = p.substr(prefix.size());
    else piece = "\xE2\x96\x81" + p;
    s.vocab.pieces[it.value().get<int32_t>()] = piece;
  }
  s.model = ModelKind::kWordPiece;
}

// A WordPiece tokenizer's BERT normalizer and pre-tokenizer are what WpmModel
// does itself; only their options are read (anything else is refused).
void parse_wordpiece_text(const json& j, Ctx& c) {
  PipelineSpec& s = *c.spec;
  const json& n = j.value("normalizer", json());
  if (!n.is_null()) {
    const std::string t = type_of(n, c, "normalizer");
    OG_CHECK(t == "BertNormalizer", c.name, ": a WordPiece tokenizer with normalizer '", t,
             "' is not supported (only BertNormalizer)");
    s.wpm_lowercase = n.value("lowercase", true);
    const json& sa = n.value("strip_accents", json());
    s.wpm_strip_accents = sa.is_boolean() ? sa.get<bool>() : s.wpm_lowercase;
  }
  const json& p = j.value("pre_tokenizer", json());
  if (!p.is_null()) {
    const std::string t = type_of(p, c, "pre_tokenizer");
    OG_CHECK(t == "BertPreTokenizer", c.name, ": a WordPiece tokenizer with pre_tokenizer '", t,
             "' is not supported (only BertPreTokenizer)");
  }
  s.dec_replace = {{"\xE2\x96\x81", " "}};
  s.dec_strip_leading_space = true;
}

void parse_model(const json& m, Ctx& c) {
  PipelineSpec& s = *c.spec;
  OG_CHECK(m.is_object(), c.name, ": model is missing");
  const std::string t = m.contains("type") ? m["type"].get<std::string>() : (m.contains("merges") ? "BPE" : "?");
  if (t == "WordPiece") return parse_wordpiece_model(m, c);
  if (t != "BPE") fail(c.name, ": unsupported model type '", t, "' (supported: BPE, WordPiece)");
  OG_CHECK(m.value("continuing_subword_prefix", json()).is_null() || m["continuing_subword_prefix"] == "",
           c.name, ": unsupported BPE option continuing_subword_prefix");
  OG_CHECK(m.value("end_of_word_suffix", json()).is_null() || m["end_of_word_suffix"] == "", c.name,
           ": unsupported BPE option end_of_word_suffix");
  const json& vocab = m.at("vocab");
  OG_CHECK(vocab.is_object() && !vocab.empty(), c.name, ": model.vocab is missing or empty");
  int32_t max_id = 0;
  for (auto it = vocab.begin(); it != vocab.end(); ++it)
    max_id = std::max(max_id, token_id(it.value(), c, "model.vocab '" + it.key() + "'"));
  Vocab::check_span(static_cast<size_t>(max_id) + 1, vocab.size(), c.name);
  s.vocab.pieces.resize(static_cast<size_t>(max_id) + 1);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) s.vocab.pieces[it.value().get<int32_t>()] = it.key();
  s.model = ModelKind::kBpe;
  s.bpe.byte_fallback = m.value("byte_fallback", false);
  s.bpe.ignore_merges = m.value("ignore_merges", false);
  s.bpe.fuse_unk = m.value("fuse_unk", false);
}

void parse_added_tokens(const json& added, Ctx& c) {
  PipelineSpec& s = *c.spec;
  if (added.is_null()) return;
  for (const json& a : added) {
    AddedToken t;
    t.id = token_id(a.at("id"), c, "added_tokens entry");
    t.content = a.at("content").get<std::string>();
    t.special = a.value("special", false);
    t.lstrip = a.value("lstrip", false);
    t.rstrip = a.value("rstrip", false);
    OG_CHECK(t.id >= 0 && t.id < (1 << 24) && !t.content.empty(), c.name, ": added token '", t.content,
             "' has a bad id or empty content");
    s.added.push_back(std::move(t));
  }
  size_t n_ids = s.vocab.pieces.size(), named = 0;
  for (const std::string& p : s.vocab.pieces) named += !p.empty();
  for (const AddedToken& t : s.added) n_ids = std::max(n_ids, static_cast<size_t>(t.id) + 1);
  Vocab::check_span(n_ids, named + s.added.size(), c.name);
  s.vocab.pieces.resize(n_ids);
  for (const AddedToken& t : s.added) s.vocab.pieces[t.id] = t.content;
}

}  // namespace

std::unique_ptr<PipelineTokenizer> load_tokenizer_json_text(const std::string& text, const std::string& name) {
  PipelineSpec spec;
  Ctx c{name, &spec};
  try {
    const json j = json::parse(text);
    OG_CHECK(j.is_object(), name, ": not a JSON object");
    parse_model(j.at("model"), c);
    const std::string unk = j["model"].value("unk_token", json()).is_string() ? j["model"]["unk_token"].get<std::string>() : "";
    parse_added_tokens(j.value("added_tokens", json()), c);
    spec.vocab.fill_holes(name);
    if (spec.bpe.byte_fallback)
      for (size_t id = 0; id < spec.vocab.pieces.size(); ++id)
        if (spec.vocab.types[id] == TokenType::kNormal && parse_byte_piece(spec.vocab.pieces[id]) >= 0)
          spec.vocab.types[id] = TokenType::kByte;
    for (const AddedToken& a : spec.added)
      spec.vocab.types[a.id] = a.special ? TokenType::kControl : TokenType::kUserDefined;
    spec.vocab.reindex();
    if (!unk.empty()) {
      spec.bpe.unk = spec.vocab.find(unk);
      OG_CHECK(spec.bpe.unk >= 0, name, ": model.unk_token '", unk, "' is not in the vocabulary");
      spec.special.unk = spec.bpe.unk;
      spec.unk = spec.bpe.unk;  // WordPiece's unknown piece
      if (spec.vocab.types[spec.bpe.unk] == TokenType::kNormal) spec.vocab.types[spec.bpe.unk] = TokenType::kUnknown;
    }
    const bool wpm = spec.model == ModelKind::kWordPiece;
    if (wpm) {
      parse_wordpiece_text(j, c);
    } else {
      parse_merges(j["model"].value("merges", json::array()), c);
      parse_normalizer(j.value("normalizer", json()), c);
      parse_pre_tokenizer(j.value("pre_tokenizer", json()), c);
    }
    parse_post_processor(j.value("post_processor", json()), c);
    if (!wpm) parse_decoder(j.value("decoder", json()), c);
  } catch (const json::exception& e) {
    fail(name, ": malformed tokenizer.json: ", e.what());
  }
  spec.kind = spec.model == ModelKind::kWordPiece
                  ? std::string("tokenizer.json WordPiece")
                  : std::string("tokenizer.json BPE ") + (spec.bpe.byte_level ? "byte-level" : "SentencePiece-style");
  if (spec.model == ModelKind::kWordPiece && spec.special.pad < 0) spec.special.pad = spec.vocab.find("[PAD]");
  SpecialTokens& s = spec.special;
  if (!spec.prefix_ids.empty()) s.bos = spec.prefix_ids.front(), s.add_bos = true;
  if (!spec.suffix_ids.empty()) s.eos = spec.suffix_ids.back(), s.add_eos = true;
  for (int32_t id : spec.prefix_ids) OG_CHECK(id >= 0 && id < spec.vocab.size(), name, ": post_processor id ", id, " out of range");
  for (int32_t id : spec.suffix_ids) OG_CHECK(id >= 0 && id < spec.vocab.size(), name, ": post_processor id ", id, " out of range");
  if (s.eos < 0)
    for (const char* e : {"</s>", "<|end_of_text|>", "<|endoftext|>", "<eos>"})
      if ((s.eos = spec.vocab.find(e)) >= 0) break;
  if (s.bos < 0)
    for (const char* b : {"<s>", "<|begin_of_text|>", "<bos>"})
      if ((s.bos = spec.vocab.find(b)) >= 0) break;
  for (const char* e : {"<|eot_id|>", "<|im_end|>", "<end_of_turn>", "<|end|>", "<turn|>"})
    if (s.eot < 0) s.eot = spec.vocab.find(e);
  s.eom = spec.vocab.find("<|eom_id|>");
  return std::make_unique<PipelineTokenizer>(std::move(spec));
}

std::unique_ptr<PipelineTokenizer> load_tokenizer_json(const std::string& path) {
  return load_tokenizer_json_text(read_text_file(path), path);
}

}  // namespace og::tok
