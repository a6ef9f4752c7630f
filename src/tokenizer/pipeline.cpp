// PipelineTokenizer: encode (added-token split, normalize, pre-tokenize,
// model, BOS/EOS) and table-driven decode.
#include "tokenizer/pipeline.h"

#include <algorithm>
#include <array>
#include <set>

#include <sentencepiece_processor.h>

#include "base/error.h"

namespace og::tok {

const std::vector<std::string>& stop_marker_texts() {
  static const std::vector<std::string> k = {"<|eot_id|>",    "<|eom_id|>",     "<|end_of_text|>", "<|im_end|>",
                                             "<|endoftext|>", "<end_of_turn>", "<|end|>",
                                             "<turn|>",       "<|tool_response>"};
  return k;
}

namespace {

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string out;
  size_t at = 0;
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, at)) {
    out.append(s, at, p - at);
    out += to;
    at = p + from.size();
  }
  if (at == 0) return;
  out.append(s, at, std::string::npos);
  s.swap(out);
}

constexpr std::string_view kMeta = "\xE2\x96\x81";

// True when some piece has U+2581 right after a character that is not U+2581.
bool has_inner_metaspace(const Vocab& v) {
  for (const std::string& p : v.pieces) {
    for (size_t at = p.find(kMeta, 1); at != std::string::npos; at = p.find(kMeta, at + 1)) {
      if (at < kMeta.size() || std::string_view(p).substr(at - kMeta.size(), kMeta.size()) != kMeta) return true;
    }
  }
  return false;
}

}  // namespace

PipelineTokenizer::PipelineTokenizer(PipelineSpec spec) : spec_(std::move(spec)) {
  const int32_t n = spec_.vocab.size();
  OG_CHECK(n > 0, "tokenizer: vocabulary is empty");
  OG_CHECK(static_cast<int32_t>(spec_.vocab.types.size()) == n, "tokenizer: token types do not match the vocabulary");
  for (const AddedToken& a : spec_.added)
    OG_CHECK(a.id >= 0 && a.id < n && !a.content.empty(), "tokenizer: added token '", a.content, "' has bad id ", a.id);
  switch (spec_.model) {
    case ModelKind::kBpe: bpe_ = std::make_unique<BpeModel>(spec_.vocab, spec_.merges, spec_.bpe); break;
    case ModelKind::kSpmScores: spm_ = std::make_unique<SpmModel>(spec_.vocab, spec_.unk); break;
    case ModelKind::kSentencePiece: OG_CHECK(spec_.sp != nullptr, "tokenizer: SentencePiece model missing"); break;
    case ModelKind::kWordPiece:
      wpm_ = std::make_unique<WpmModel>(spec_.vocab, spec_.unk, spec_.wpm_lowercase, spec_.wpm_strip_accents);
      break;
  }
  spec_.merges.clear();
  spec_.merges.shrink_to_fit();
  const bool whole_fragments = spec_.model == ModelKind::kSpmScores ||
                               (spec_.model == ModelKind::kBpe && !spec_.bpe.byte_level && spec_.pre.empty());
  split_at_metaspace_ = whole_fragments && !has_inner_metaspace(spec_.vocab);
  build_added_index();
  build_decode_table();
  finish_stop_ids();
  find_fim_ids();
}

void PipelineTokenizer::find_fim_ids() {
  SpecialTokens& s = spec_.special;
  if (s.fim_pre < 0 && s.fim_suf < 0 && s.fim_mid < 0) {
    // Prefix, suffix, middle markers of the models trained for PSM-order
    // fill-in-the-middle: Qwen2.5-Coder and CodeGemma, StarCoder, SantaCoder,
    // DeepSeek-Coder, Code Llama.
    static const std::array<std::array<const char*, 3>, 5> kSets = {{
        {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"},
        {"<fim_prefix>", "<fim_suffix>", "<fim_middle>"},
        {"<fim-prefix>", "<fim-suffix>", "<fim-middle>"},
        {"<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C>",
         "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>"},
        {"\xE2\x96\x81<PRE>", "\xE2\x96\x81<SUF>", "\xE2\x96\x81<MID>"},
    }};
    for (const auto& set : kSets) {
      const int32_t pre = spec_.vocab.find(set[0]), suf = spec_.vocab.find(set[1]), mid = spec_.vocab.find(set[2]);
      if (pre < 0 || suf < 0 || mid < 0) continue;
      s.fim_pre = pre;
      s.fim_suf = suf;
      s.fim_mid = mid;
      break;
    }
  }
  // All three or none: a file naming only some cannot build a FIM prompt.
  if (s.fim_pre < 0 || s.fim_suf < 0 || s.fim_mid < 0) s.fim_pre = s.fim_suf = s.fim_mid = -1;
}

PipelineTokenizer::~PipelineTokenizer() = default;

void PipelineTokenizer::build_added_index() {
  for (auto& v : added_by_byte_) v.clear();
  for (size_t i = 0; i < spec_.added.size(); ++i)
    added_by_byte_[static_cast<uint8_t>(spec_.added[i].content[0])].push_back(static_cast<uint32_t>(i));
  for (auto& v : added_by_byte_)
    std::stable_sort(v.begin(), v.end(), [&](uint32_t a, uint32_t b) {
      return spec_.added[a].content.size() > spec_.added[b].content.size();
    });
}

void PipelineTokenizer::build_decode_table() {
  const int32_t n = spec_.vocab.size();
  token_bytes_.assign(n, {});
  std::string raw;
  for (int32_t id = 0; id < n; ++id) {
    const std::string& p = spec_.vocab.pieces[id];
    const TokenType t = spec_.vocab.types[id];
    std::string& out = token_bytes_[id];
    // Unused slots (GGUF type 5, holes in an HF vocabulary) render as
    // nothing, special or not, as llama.cpp's token_to_piece does: a model
    // that samples one prints no placeholder such as <unused7>.
    if (t == TokenType::kUnused) continue;
    if (t == TokenType::kControl || t == TokenType::kUnknown || t == TokenType::kUserDefined) {
      out = p;
      continue;
    }
    const int b = spec_.dec_byte_fallback ? parse_byte_piece(p) : -1;
    if (b >= 0) {
      out.assign(1, static_cast<char>(b));
      continue;
    }
    raw.clear();
    if (spec_.dec_byte_level && byte_level_decode(p, raw)) {
      out = raw;
      continue;
    }
    out = p;
    for (const auto& [from, to] : spec_.dec_replace) replace_all(out, from, to);
  }
}

void PipelineTokenizer::finish_stop_ids(const std::vector<int32_t>& extra) {
  SpecialTokens& s = spec_.special;
  std::set<int32_t> ids;
  for (int32_t id : {s.eos, s.eot, s.eom})
    if (id >= 0 && id < n_vocab()) ids.insert(id);
  for (const std::string& m : stop_marker_texts()) {
    const int32_t id = spec_.vocab.find(m);
    if (id >= 0) ids.insert(id);
  }
  for (int32_t id : extra)
    if (id >= 0 && id < n_vocab()) ids.insert(id);
  // Harmony (gpt-oss): <|end|> closes a message in the middle of a reply (the
  // analysis channel before the final one); the reply ends at <|return|> or
  // <|call|>. A vocabulary with both is harmony's: <|end|> is no stop there,
  // as llama.cpp removes it from its end-of-generation set.
  const int32_t ret = spec_.vocab.find("<|return|>"), call = spec_.vocab.find("<|call|>");
  if (ret >= 0 && call >= 0) {
    if (const int32_t end = spec_.vocab.find("<|end|>"); end >= 0) {
      ids.erase(end);
      if (s.eot == end) s.eot = ret;  // the turn ends at <|return|>
    }
    ids.insert(ret);
    ids.insert(call);
  }
  s.stop_ids.assign(ids.begin(), ids.end());
}

void PipelineTokenizer::set_add_bos(bool on) {
  auto& p = spec_.prefix_ids;
  const int32_t bos = spec_.special.bos;
  if (on) {
    OG_CHECK(bos >= 0, "tokenizer: add_bos is set but the vocabulary has no BOS token");
    if (p.empty() || p.front() != bos) p.insert(p.begin(), bos);
  } else if (!p.empty() && p.front() == bos) {
    p.erase(p.begin());
  }
  spec_.special.add_bos = on;
}

void PipelineTokenizer::set_add_eos(bool on) {
  auto& s = spec_.suffix_ids;
  const int32_t eos = spec_.special.eos;
  if (on) {
    OG_CHECK(eos >= 0, "tokenizer: add_eos is set but the vocabulary has no EOS token");
    if (s.empty() || s.back() != eos) s.push_back(eos);
  } else if (!s.empty() && s.back() == eos) {
    s.pop_back();
  }
  spec_.special.add_eos = on;
}

const AddedToken* PipelineTokenizer::match_added(std::string_view text, size_t pos, size_t special_end) const {
  for (uint32_t i : added_by_byte_[static_cast<uint8_t>(text[pos])]) {
    const AddedToken& a = spec_.added[i];
    if (a.special && pos + a.content.size() > special_end) continue;
    if (text.compare(pos, a.content.size(), a.content) == 0) return &a;
  }
  return nullptr;
}

std::vector<int32_t> PipelineTokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  SpecialRanges ranges;
  if (parse_special) ranges.emplace_back(0, text.size());
  return encode_ranges(text, add_special, ranges);
}

std::vector<int32_t> PipelineTokenizer::encode_parts(std::span<const TextPart> parts, bool add_special) const {
  std::string text;
  SpecialRanges ranges;
  for (const TextPart& p : parts) {
    if (p.parse_special && !p.text.empty()) ranges.emplace_back(text.size(), text.size() + p.text.size());
    text += p.text;
  }
  return encode_ranges(text, add_special, ranges);
}

std::vector<int32_t> PipelineTokenizer::encode_ranges(std::string_view text, bool add_special,
                                                      const SpecialRanges& ranges) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special) out = spec_.prefix_ids;
  size_t frag = 0, range = 0;
  bool after_token = false;
  if (!spec_.added.empty()) {
    for (size_t pos = 0; pos < text.size();) {
      if (added_by_byte_[static_cast<uint8_t>(text[pos])].empty()) {
        ++pos;
        continue;
      }
      while (range < ranges.size() && ranges[range].second <= pos) ++range;
      // Where a special token starting here must end (0: none may start here).
      const size_t special_end = range < ranges.size() && ranges[range].first <= pos ? ranges[range].second : 0;
      const AddedToken* a = match_added(text, pos, special_end);
      if (!a) {
        ++pos;
        continue;
      }
      size_t end_text = pos, next = pos + a->content.size();
      if (a->lstrip)
        while (end_text > frag && is_ascii_space(text[end_text - 1])) --end_text;
      if (a->rstrip)
        while (next < text.size() && is_ascii_space(text[next])) ++next;
      if (end_text > frag) encode_fragment(text.substr(frag, end_text - frag), frag == 0, after_token, out);
      out.push_back(a->id);
      after_token = true;
      pos = frag = next;
    }
  }
  if (frag < text.size()) encode_fragment(text.substr(frag), frag == 0, after_token, out);
  if (add_special) out.insert(out.end(), spec_.suffix_ids.begin(), spec_.suffix_ids.end());
  return out;
}

bool PipelineTokenizer::strips_space_after(int32_t id) const {
  for (const AddedToken& a : spec_.added)
    if (a.id == id && a.rstrip) return true;
  return false;
}

std::string PipelineTokenizer::normalize(std::string_view text) const {
  std::string s(text);
  for (const NormalizerStep& n : spec_.normalizers) {
    switch (n.kind) {
      case NormalizerStep::Kind::kUnicode: s = normalize_unicode(s, n.form); break;
      case NormalizerStep::Kind::kLowercase: s = lowercase_unicode(s); break;
      case NormalizerStep::Kind::kPrepend:
        if (!s.empty()) s.insert(0, n.a);
        break;
      case NormalizerStep::Kind::kReplace:
        if (n.regex) {
          std::vector<Span> m;
          n.regex->find_all(s, {0, static_cast<uint32_t>(s.size())}, m);
          std::string r;
          uint32_t at = 0;
          for (const Span& sp : m) {
            r.append(s, at, sp.begin - at);
            r += n.b;
            at = sp.end;
          }
          r.append(s, at, std::string::npos);
          s.swap(r);
        } else {
          replace_all(s, n.a, n.b);
        }
        break;
      case NormalizerStep::Kind::kStrip: {
        size_t b = 0, e = s.size();
        if (n.left)
          while (b < e && is_ascii_space(s[b])) ++b;
        if (n.right)
          while (e > b && is_ascii_space(s[e - 1])) --e;
        s = s.substr(b, e - b);
        break;
      }
    }
  }
  return s;
}

void PipelineTokenizer::pre_tokenize(std::string& buf, std::vector<Span>& words, bool first) const {
  thread_local std::vector<Span> next, scratch;
  std::string nb;
  for (const PreTokStep& st : spec_.pre) {
    const bool rebuild = (st.kind == PreTokStep::Kind::kByteLevel && st.add_prefix_space) ||
                         st.kind == PreTokStep::Kind::kMetaspace;
    if (rebuild) {
      nb.clear();
      next.clear();
      for (size_t i = 0; i < words.size(); ++i) {
        std::string_view w(buf.data() + words[i].begin, words[i].end - words[i].begin);
        const auto begin = static_cast<uint32_t>(nb.size());
        if (st.kind == PreTokStep::Kind::kByteLevel) {
          if (w.empty() || w[0] != ' ') nb += ' ';
          nb += w;
        } else {
          std::string t(w);
          replace_all(t, " ", st.replacement);
          const bool prepend = st.prepend == PreTokStep::Prepend::kAlways ||
                               (st.prepend == PreTokStep::Prepend::kFirst && first && i == 0);
          if (prepend && t.compare(0, st.replacement.size(), st.replacement) != 0) nb += st.replacement;
          nb += t;
        }
        next.push_back({begin, static_cast<uint32_t>(nb.size())});
      }
      buf.swap(nb);
      words.swap(next);
    }
    if (st.regex && (st.kind != PreTokStep::Kind::kMetaspace || st.split)) {
      next.clear();
      for (const Span& w : words) split_span(*st.regex, buf, w, st.behavior, st.invert, next, scratch);
      words.swap(next);
    }
  }
}

void PipelineTokenizer::encode_fragment(std::string_view text, bool first, bool /*after_token*/,
                                        std::vector<int32_t>& out) const {
  std::string buf;
  if (!spec_.normalizers.empty()) {
    buf = normalize(text);
  } else {
    buf.assign(text);
  }
  if (spec_.spm_add_space_prefix) buf.insert(0, 1, ' ');
  if (spec_.spm_escape_spaces) replace_all(buf, " ", "\xE2\x96\x81");
  if (buf.empty()) return;
  if (split_at_metaspace_) {
    const std::string_view b(buf);
    size_t start = 0;
    for (size_t at = b.find(kMeta, 1); at != std::string_view::npos; at = b.find(kMeta, at + kMeta.size())) {
      if (at - start >= kMeta.size() && b.substr(at - kMeta.size(), kMeta.size()) == kMeta) continue;
      if (at > start) encode_word(b.substr(start, at - start), out);
      start = at;
    }
    encode_word(b.substr(start), out);
    return;
  }
  switch (spec_.model) {
    case ModelKind::kWordPiece: wpm_->encode(buf, out); return;
    case ModelKind::kSpmScores: spm_->encode(buf, out); return;
    case ModelKind::kSentencePiece: {
      std::vector<int> ids;
      const auto st = spec_.sp->Encode(buf, &ids);
      OG_CHECK(st.ok(), "tokenizer: SentencePiece encode failed: ", st.ToString());
      out.insert(out.end(), ids.begin(), ids.end());
      return;
    }
    case ModelKind::kBpe: break;
  }
  thread_local std::vector<Span> words;
  words.clear();
  words.push_back({0, static_cast<uint32_t>(buf.size())});
  if (!spec_.pre.empty()) pre_tokenize(buf, words, first);
  for (const Span& w : words) bpe_->encode_word(std::string_view(buf).substr(w.begin, w.end - w.begin), out);
}

void PipelineTokenizer::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (spm_) {
    spm_->encode_word(word, out);
  } else {
    bpe_->encode_word(word, out);
  }
}

std::string PipelineTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  for (int32_t id : ids) {
    OG_CHECK(id >= 0 && id < n_vocab(), "tokenizer: token id ", id, " out of range [0, ", n_vocab(), ")");
    const TokenType t = spec_.vocab.types[id];
    if (skip_special && (t == TokenType::kControl || t == TokenType::kUnknown)) continue;
    out += token_bytes_[id];
  }
  if (spec_.dec_strip_leading_space && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

std::string PipelineTokenizer::token_bytes(int32_t id) const {
  OG_CHECK(id >= 0 && id < n_vocab(), "tokenizer: token id ", id, " out of range [0, ", n_vocab(), ")");
  return token_bytes_[id];
}

const std::string& PipelineTokenizer::piece(int32_t id) const {
  OG_CHECK(id >= 0 && id < n_vocab(), "tokenizer: token id ", id, " out of range [0, ", n_vocab(), ")");
  return spec_.vocab.pieces[id];
}

TokenType PipelineTokenizer::token_type(int32_t id) const {
  OG_CHECK(id >= 0 && id < n_vocab(), "tokenizer: token id ", id, " out of range [0, ", n_vocab(), ")");
  return spec_.vocab.types[id];
}

std::optional<int32_t> PipelineTokenizer::find_piece(std::string_view piece) const {
  const int32_t id = spec_.vocab.find(piece);
  return id < 0 ? std::nullopt : std::optional<int32_t>(id);
}

}  // namespace og::tok
