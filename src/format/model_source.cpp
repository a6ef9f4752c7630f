// ModelSource::open: one check of the path, then one reader per kind (the
// GGUF reader, HfCheckpoint), and the template text read while the files are at hand.
#include "format/model_source.h"

#include <sys/stat.h>

#include "base/error.h"
#include "format/chat_template_source.h"
#include "format/safetensors.h"

namespace og {

std::shared_ptr<const ModelSource> ModelSource::open(const std::string& path, bool weights) {
  struct stat st {};
  OG_CHECK(!path.empty() && ::stat(path.c_str(), &st) == 0, path, ": no such file or directory");
  auto s = std::make_shared<ModelSource>();
  s->path_ = path;
  if (S_ISDIR(st.st_mode)) {
    // Without weights any directory of HF files will do (a template or a
    // tokenizer needs no config.json); with them it must be a checkpoint.
    HfCheckpoint ck = weights ? HfCheckpoint::open(path, true) : HfCheckpoint::open_files(path);
    if (ck.weights) s->tensors_ = std::shared_ptr<const TensorSource>(std::move(ck.weights));
    StoredChatTemplates t = read_chat_templates(ck);
    s->template_ = std::move(t.text);
    s->variants_ = std::move(t.variants);
    s->hf_ = std::move(ck);
  } else {
    s->gguf_ = GgufFile::open(path);
    s->tensors_ = s->gguf_;
    s->template_ = read_chat_template(*s->gguf_);
    s->variants_ = read_chat_template_variants(*s->gguf_);
  }
  return s;
}

}  // namespace og
