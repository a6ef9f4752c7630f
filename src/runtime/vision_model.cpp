// Loading a vision tower next to the text model (vision_model.h): from
// llama.cpp's mmproj GGUF or from an HF directory's own tensors.
#include "runtime/vision_model.h"

#include <filesystem>
#include <sstream>
#include <vector>

#include "base/error.h"
#include "format/hf_config.h"
#include "format/hf_image_processor.h"
#include "model/config.h"
#include "model/families/family.h"
#include "model/vision_encoder.h"
#include "runtime/vision_encoder_image.h"

namespace og {
namespace {

// What each projector type needs of the text model: the families it goes
// with and the token texts its template uses around and in an image.
struct ProjectorKind {
  const char* name;                      // clip.projector_type
  std::vector<std::string> families;     // text architectures it projects into
  const char* begin;
  const char* placeholder;
  const char* end;
};

const std::vector<ProjectorKind>& projector_kinds() {
  static const std::vector<ProjectorKind> kinds = {
      {"gemma3", {"gemma3"}, "<start_of_image>", "<image_soft_token>", "<end_of_image>"},
      // model/vision_encoder.h's towers ("" = no such token): Gemma 4's, LLaVA 1.5's
      {"gemma4v", {"gemma4"}, "<|image>", "<|image|>", "<image|>"},
      {"mlp", {"llama"}, "", "<image>", ""},
  };
  return kinds;
}

const ProjectorKind* find_kind(const std::string& name) {
  for (const ProjectorKind& k : projector_kinds())
    if (name == k.name) return &k;
  return nullptr;
}

std::string known_kinds() {
  std::string s;
  for (const ProjectorKind& k : projector_kinds()) s += (s.empty() ? "" : ", ") + std::string(k.name);
  return s;
}

int32_t need_token(const Tokenizer& tok, const char* text, const ProjectorKind& k, const std::string& model) {
  const std::optional<int32_t> id = tok.find_piece(text);
  OG_CHECK(id.has_value(), model, ": the tokenizer has no ", text, " token (a ", k.name, " vision tower needs ",
           k.begin, ", ", k.placeholder, " and ", k.end, ")");
  return *id;
}

// The parts every source fills the same way once the tower is bound.
std::string summary_of(const VisionTowerConfig& c, const std::string& projector) {
  std::ostringstream o;
  o << projector << " vision tower: " << c.image_size << "x" << c.image_size << " pixels, patch " << c.patch_size
    << ", " << c.n_layers << " layers, width " << c.hidden << ", " << c.n_heads << " heads, "
    << c.mm_tokens_per_image << " tokens per image, projection width " << c.text_hidden;
  return o.str();
}

void finish(VisionModel& v, const ProjectorKind& k, const Model& text, const Tokenizer& tok,
            const std::string& model_path, const std::string& where) {
  if (v.tower) {  // else use_encoder filled these
    const VisionTowerConfig& c = v.tower->config();
    v.projection_width = c.text_hidden;
    v.summary = summary_of(c, k.name);
    v.tokens_per_image = c.mm_tokens_per_image;
    v.preprocess.width = static_cast<int>(c.image_size);
    v.preprocess.height = static_cast<int>(c.image_size);
  }
  OG_CHECK(v.projection_width == text.config().d_model, where, ": the vision tower projects to width ",
           v.projection_width, " but the text model's hidden size is ", text.config().d_model,
           " (an mmproj of another model?)");
  v.tokens.begin = *k.begin ? need_token(tok, k.begin, k, model_path) : -1;
  v.tokens.placeholder = need_token(tok, k.placeholder, k, model_path);
  v.tokens.end = *k.end ? need_token(tok, k.end, k, model_path) : -1;
  const FamilySpec* fam = family_by_name(text.architecture());
  // Spans only where the family has them and some layer opens them (Gemma 4
  // E2B/E4B: none, so their image rows are plain causal rows).
  bool opened = false;
  for (const LayerConfig& L : text.config().layers) opened = opened || L.opens_image_spans;
  v.bidirectional = fam != nullptr && fam->image_spans_bidirectional && opened;
  v.projector = k.name;
}

void check_family(const ProjectorKind& k, const Model& text, const std::string& file) {
  for (const std::string& f : k.families)
    if (f == text.architecture()) return;
  fail(file, ": a ", k.name, " vision tower needs a ", k.families.front(), " text model, but the model is ",
       text.architecture(), " (a model family without image input here)");
}

// clip.vision.image_mean / image_std: three numbers when present.
void read_mean_std(const GgufFile& f, const char* key, std::array<float, 3>& out) {
  const std::optional<std::vector<double>> v = f.get_float_array(key);
  if (!v) return;
  OG_CHECK(v->size() == 3, f.source_name(), ": ", key, " has ", v->size(), " values, expected 3");
  for (size_t i = 0; i < 3; ++i) out[i] = static_cast<float>((*v)[i]);
}

std::shared_ptr<const VisionModel> from_mmproj(const std::string& path, const Model& text, const Tokenizer& tok,
                                               const std::string& model_path) {
  std::error_code ec;
  OG_CHECK(std::filesystem::exists(path, ec), "--mmproj ", path, ": no such file");
  OG_CHECK(std::filesystem::is_regular_file(path, ec), "--mmproj ", path, ": not a regular file");
  std::shared_ptr<GgufFile> f;
  try {
    f = GgufFile::open(path);
  } catch (const Error& e) {
    fail("--mmproj ", path, ": not a GGUF file (", e.what(), ")");
  }
  // A file with more than one modality names the vision projector under
  // clip.vision (llama.cpp's converter writes Gemma 4's so), others under clip.
  std::optional<std::string> type = f->get_string("clip.vision.projector_type");
  if (!type) type = f->get_string("clip.projector_type");
  if (!type) {
    const std::optional<std::string> arch = f->get_string("general.architecture");
    fail("--mmproj ", path, ": not an mmproj (clip) file: clip.projector_type is missing",
         arch ? " (general.architecture is " + *arch + ")" : std::string());
  }
  const ProjectorKind* k = find_kind(*type);
  OG_CHECK(k != nullptr, "--mmproj ", path, ": projector type ", *type, " is not supported (supported: ",
           known_kinds(), ")");
  check_family(*k, text, "--mmproj " + path);
  auto v = std::make_shared<VisionModel>();
  v->path = path;
  if (*type != "gemma3") {  // Gemma 4's and LLaVA's towers, through model/vision_encoder.h
    use_encoder(*v, load_vision_encoder(*f));
    v->keep_alive = f;
    finish(*v, *k, text, tok, model_path, "--mmproj " + path);
    return v;
  }
  const VisionTowerConfig c = gemma3_mmproj_config(*f);
  v->tower = std::make_shared<const VisionTower>(c, bind_gemma3_mmproj(c, *f));
  v->keep_alive = f;
  v->preprocess = vision::gemma3_siglip_config();
  read_mean_std(*f, "clip.vision.image_mean", v->preprocess.mean);
  read_mean_std(*f, "clip.vision.image_std", v->preprocess.std);
  finish(*v, *k, text, tok, model_path, "--mmproj " + path);
  return v;
}

// preprocessor_config.json beside config.json, when present: mean, std,
// rescale factor and resample (2 bilinear, 3 bicubic); its size must be the
// tower's image size.
void apply_image_processor(const std::string& dir, int64_t image_size, vision::PreprocessConfig& p) {
  const std::optional<HfImageProcessor> hp = read_hf_image_processor(dir);
  if (!hp) return;
  if (hp->mean) p.mean = *hp->mean;
  if (hp->std) p.std = *hp->std;
  if (hp->rescale) p.rescale = *hp->rescale;
  if (hp->resample) {
    OG_CHECK(*hp->resample == 2 || *hp->resample == 3, hp->path, ": resample ", *hp->resample,
             " is not supported (2 bilinear, 3 bicubic)");
    p.resample = *hp->resample == 2 ? vision::Resample::bilinear : vision::Resample::bicubic;
  }
  OG_CHECK((!hp->height || *hp->height == image_size) && (!hp->width || *hp->width == image_size), hp->path,
           ": size ", hp->width.value_or(0), "x", hp->height.value_or(0), " is not the vision tower's image_size ",
           image_size);
}

// An HF Gemma 4 or LLaVA checkpoint's own tower (model/vision_encoder.h);
// null unless both its patch embedding and its projector are there (a
// stripped tower, or og-synth's stand-in patch tensor, loads as text).
std::shared_ptr<const VisionModel> from_hf_encoder(const ModelSource& src, const HfCheckpoint& hf, const char* kind,
                                                   const Model& text, const Tokenizer& tok) {
  const TensorSource& ts = *src.tensors();
  const bool g4 = std::string(kind) == "gemma4v";
  for (const std::string name : {g4 ? "vision_tower.patch_embedder.input_proj.weight"
                                    : "vision_tower.vision_model.embeddings.patch_embedding.weight",
                                 g4 ? "embed_vision.embedding_projection.weight" : "multi_modal_projector.linear_1.weight"})
    if (ts.find(name) == nullptr && ts.find("model." + name) == nullptr) return nullptr;
  const ProjectorKind* k = find_kind(kind);
  check_family(*k, text, src.path());
  auto v = std::make_shared<VisionModel>();
  v->path = src.path();
  use_encoder(*v, load_vision_encoder(hf.config, hf.config_path, ts, read_image_processor_settings(hf.dir)));
  v->keep_alive = src.tensors();
  finish(*v, *k, text, tok, src.path(), src.path());
  return v;
}

std::shared_ptr<const VisionModel> from_hf(const ModelSource& src, const Model& text, const Tokenizer& tok) {
  const HfCheckpoint* hf = src.hf();
  if (hf == nullptr || !hf->config.contains("vision_config") || src.tensors() == nullptr) return nullptr;
  const std::string model_type = json_string(hf->config, "model_type", hf->config_path).value_or("");
  if (model_type == "gemma4" || model_type == "llava")
    return from_hf_encoder(src, *hf, model_type == "gemma4" ? "gemma4v" : "mlp", text, tok);
  // Gemma 3's tower; a checkpoint whose tower tensors were stripped loads as a text model.
  const ProjectorKind* k = find_kind("gemma3");
  if (json_string(hf->config, "model_type", hf->config_path).value_or("") != "gemma3") return nullptr;
  const TensorSource& ts = *src.tensors();
  if (ts.find("vision_tower.vision_model.embeddings.patch_embedding.weight") == nullptr &&
      ts.find("model.vision_tower.vision_model.embeddings.patch_embedding.weight") == nullptr)
    return nullptr;
  check_family(*k, text, src.path());
  auto v = std::make_shared<VisionModel>();
  v->path = src.path();
  const VisionTowerConfig c = gemma3_vision_config(hf->config, hf->config_path);
  v->tower = std::make_shared<const VisionTower>(c, bind_gemma3_vision(c, ts));
  v->keep_alive = src.tensors();
  v->preprocess = vision::gemma3_siglip_config();
  apply_image_processor(hf->dir, c.image_size, v->preprocess);
  finish(*v, *k, text, tok, src.path(), src.path());
  return v;
}

}  // namespace

TowerImage VisionModel::encode(std::string_view image_bytes, const vision::DecodeLimits& limits) const {
  const vision::Image im =
      vision::decode_image(reinterpret_cast<const uint8_t*>(image_bytes.data()), image_bytes.size(), limits);
  return encode(im);
}

TowerImage VisionModel::encode(const vision::Image& image) const {
  if (encoder) return encoder(image);
  OG_CHECK(tower != nullptr, path, ": the vision model has no tower");
  return encode_image(*tower, vision::preprocess_image(image, preprocess));
}

std::shared_ptr<const VisionModel> load_vision_model(const std::string& mmproj, const ModelSource& text_src,
                                                     const Model& text, const Tokenizer& tok) {
  if (!mmproj.empty()) return from_mmproj(mmproj, text, tok, text_src.path());
  return from_hf(text_src, text, tok);
}

}  // namespace og
