// Offscreen framebuffer + PNG writing for --screenshot (see screenshot.h).
#define GL_GLEXT_PROTOTYPES 1  // glGenFramebuffers & co. are exported by libGL on Linux
#include "viewer/app/screenshot.h"

#include <GL/gl.h>
#include <GL/glext.h>

#include <cstring>
#include <stdexcept>

#include "framework/io/atomic_file.h"

#include <stb_image_write.h>  // compiled into Debian's libstb: no *_IMPLEMENTATION here

namespace hg::viewer {

Offscreen::Offscreen(int width, int height) : w_(width), h_(height) {
  glGenFramebuffers(1, &fbo_);
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
  glGenTextures(1, &color_);
  glBindTexture(GL_TEXTURE_2D, color_);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, w_, h_, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, color_, 0);
  GLenum status = glCheckFramebufferStatus(GL_FRAMEBUFFER);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  if (status != GL_FRAMEBUFFER_COMPLETE)
    throw std::runtime_error("offscreen framebuffer incomplete (status 0x" +
                             std::to_string(status) + ")");
}

Offscreen::~Offscreen() {
  glDeleteFramebuffers(1, &fbo_);
  glDeleteTextures(1, &color_);
}

void Offscreen::bind() const { glBindFramebuffer(GL_FRAMEBUFFER, fbo_); }
void Offscreen::unbind() const { glBindFramebuffer(GL_FRAMEBUFFER, 0); }

std::vector<uint8_t> Offscreen::read() const {
  std::vector<uint8_t> px(static_cast<size_t>(w_) * h_ * 4), out(px.size());
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, w_, h_, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  const size_t row = static_cast<size_t>(w_) * 4;
  for (int y = 0; y < h_; ++y)  // OpenGL's row 0 is the bottom
    std::memcpy(&out[y * row], &px[(h_ - 1 - y) * row], row);
  for (size_t i = 3; i < out.size(); i += 4) out[i] = 255;  // opaque PNG
  return out;
}

// The PNG is encoded in memory first, then written by hg::io::write_file_atomic: a temporary
// in the same folder, every write, the fsync and the close checked, renamed over `path` only
// when complete. (stbi_write_png writes the file itself and ignores failed writes: on a full
// disk it reported success and left a truncated PNG in place of the old one.)
std::string write_png(const std::string& path, int w, int h, const std::vector<uint8_t>& rgba) {
  std::vector<uint8_t> png;
  auto append = [](void* ctx, void* data, int n) {
    auto* out = static_cast<std::vector<uint8_t>*>(ctx);
    out->insert(out->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + n);
  };
  if (!stbi_write_png_to_func(append, &png, w, h, 4, rgba.data(), w * 4) || png.empty())
    return path + ": cannot encode the PNG";
  return write_text_file(path, std::string(png.begin(), png.end()));
}

std::string write_text_file(const std::string& path, const std::string& bytes) {
  try {
    hg::io::write_file_atomic(path, bytes);
    return "";
  } catch (const std::exception& e) {
    return e.what();  // "cannot write PATH: write failed: No space left on device (the previous ..."
  }
}

}  // namespace hg::viewer
