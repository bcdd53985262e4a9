#pragma once
// Headless screenshots: render into an offscreen framebuffer (works with a hidden window on
// Xvfb and on real drivers alike: a hidden window's own pixels are undefined), read it back,
// write a PNG.
#include <cstdint>
#include <string>
#include <vector>

namespace hg::viewer {

class Offscreen {
 public:
  Offscreen(int width, int height);  // throws std::runtime_error if the FBO is incomplete
  ~Offscreen();
  void bind() const;    // draw into it
  void unbind() const;  // back to the window
  // RGBA pixels, top row first (OpenGL reads bottom-up; flipped here).
  std::vector<uint8_t> read() const;
  int width() const { return w_; }
  int height() const { return h_; }

 private:
  int w_, h_;
  unsigned fbo_ = 0, color_ = 0;
};

// Writes a PNG atomically (hg::io::write_file_atomic: a temporary in the same folder, every
// write and close checked, fsync, rename only when complete). Returns "" or the error; on an
// error the previous file at `path` is untouched and no temporary is left.
std::string write_png(const std::string& path, int w, int h, const std::vector<uint8_t>& rgba);
// Writes bytes atomically, the same way. Returns "" or the error.
std::string write_text_file(const std::string& path, const std::string& bytes);

}  // namespace hg::viewer
