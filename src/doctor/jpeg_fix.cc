#include "doctor/jpeg_fix.h"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <jpeglib.h>
#include <jerror.h>

namespace edgedecode::doctor {
namespace {

struct Err {
  jpeg_error_mgr mgr;
  jmp_buf jump;
  char msg[JMSG_LENGTH_MAX];
  char damage[JMSG_LENGTH_MAX];  // the first warning that means lost or invalid entropy-coded data
};

void OnError(j_common_ptr c) {
  Err* e = reinterpret_cast<Err*>(c->err);
  c->err->format_message(c, e->msg);
  std::longjmp(e->jump, 1);
}

// libjpeg "succeeds" on a cut or corrupt scan: it warns and fills the missing blocks with grey.
// A rewrite of such a file would look clean, so these warnings make the rewrite fail (the caller
// refuses the fix) instead of being ignored.
void OnMessage(j_common_ptr c, int level) {
  if (level != -1) return;  // trace messages
  Err* e = reinterpret_cast<Err*>(c->err);
  const int code = c->err->msg_code;
  const bool damage = code == JWRN_JPEG_EOF || code == JWRN_EXTRANEOUS_DATA || code == JWRN_HIT_MARKER ||
                      code == JWRN_MUST_RESYNC || code == JWRN_NOT_SEQUENTIAL || code == JWRN_BOGUS_PROGRESSION ||
                      code == JWRN_HUFF_BAD_CODE || code == JWRN_ARITH_BAD_CODE || code == JWRN_TOO_MUCH_DATA;
  if (damage && !e->damage[0]) c->err->format_message(c, e->damage);
}

// A decompressor and a compressor, zeroed, whose errors jump to their Err (the caller sets the jumps).
void InitCodecs(jpeg_decompress_struct* d, jpeg_compress_struct* c, Err* ed, Err* ec) {
  std::memset(d, 0, sizeof *d);
  std::memset(c, 0, sizeof *c);
  d->err = jpeg_std_error(&ed->mgr);
  c->err = jpeg_std_error(&ec->mgr);
  ed->mgr.error_exit = ec->mgr.error_exit = OnError;
  ed->mgr.emit_message = ec->mgr.emit_message = OnMessage;
  ed->msg[0] = ec->msg[0] = 0;
  ed->damage[0] = ec->damage[0] = 0;
}

// False (with the reason in msg) when the source warned of damaged data while being read.
bool Undamaged(const Err& ed, char* msg) {
  if (!ed.damage[0]) return true;
  std::snprintf(msg, JMSG_LENGTH_MAX, "the source is damaged (%s); not rewritten, the copy would hide it", ed.damage);
  return false;
}

// Plain C state only in these frames (setjmp). What is set after setjmp and read after a longjmp is volatile:
// a register copy would be stale there (the compressor and the row buffer leaked on every failed source).
bool Transcode(const uint8_t* data, size_t n, unsigned char** out, unsigned long* out_n, char* msg) {
  jpeg_decompress_struct d;
  jpeg_compress_struct c;
  Err ed, ec;
  InitCodecs(&d, &c, &ed, &ec);
  volatile bool made_c = false;
  if (setjmp(ed.jump) || setjmp(ec.jump)) {
    std::snprintf(msg, JMSG_LENGTH_MAX, "%s", ed.msg[0] ? ed.msg : ec.msg);
    if (made_c) jpeg_destroy_compress(&c);
    jpeg_destroy_decompress(&d);
    return false;
  }
  jpeg_create_decompress(&d);
  jpeg_mem_src(&d, data, static_cast<unsigned long>(n));
  jpeg_read_header(&d, TRUE);
  jvirt_barray_ptr* coefs = jpeg_read_coefficients(&d);
  jpeg_create_compress(&c);
  made_c = true;
  jpeg_copy_critical_parameters(&d, &c);
  c.arith_code = FALSE;
  c.optimize_coding = TRUE;
  jpeg_mem_dest(&c, out, out_n);
  jpeg_write_coefficients(&c, coefs);  // sequential unless jpeg_simple_progression is called
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  jpeg_finish_decompress(&d);
  jpeg_destroy_decompress(&d);
  return Undamaged(ed, msg);
}

bool Resize(const uint8_t* data, size_t n, int64_t max_w, int64_t max_h, int quality, unsigned char** out,
            unsigned long* out_n, char* msg) {
  jpeg_decompress_struct d;
  jpeg_compress_struct c;
  Err ed, ec;
  InitCodecs(&d, &c, &ed, &ec);
  volatile bool made_c = false;
  JSAMPROW volatile row = nullptr;
  if (setjmp(ed.jump) || setjmp(ec.jump)) {
    std::snprintf(msg, JMSG_LENGTH_MAX, "%s", ed.msg[0] ? ed.msg : ec.msg);
    std::free(row);
    if (made_c) jpeg_destroy_compress(&c);
    jpeg_destroy_decompress(&d);
    return false;
  }
  jpeg_create_decompress(&d);
  jpeg_mem_src(&d, data, static_cast<unsigned long>(n));
  jpeg_read_header(&d, TRUE);
  int m = 16;
  while (m > 1 && (static_cast<int64_t>(d.image_width) * m / 8 > max_w || static_cast<int64_t>(d.image_height) * m / 8 > max_h)) --m;
  d.scale_num = m;
  d.scale_denom = 8;
  if (d.jpeg_color_space == JCS_CMYK || d.jpeg_color_space == JCS_YCCK) d.out_color_space = JCS_CMYK;
  else if (d.num_components == 1) d.out_color_space = JCS_GRAYSCALE;
  else d.out_color_space = JCS_RGB;
  jpeg_start_decompress(&d);
  jpeg_create_compress(&c);
  made_c = true;
  c.image_width = d.output_width;
  c.image_height = d.output_height;
  c.input_components = d.output_components;
  c.in_color_space = d.out_color_space;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  c.optimize_coding = TRUE;
  jpeg_mem_dest(&c, out, out_n);
  jpeg_start_compress(&c, TRUE);
  row = static_cast<JSAMPROW>(std::malloc(static_cast<size_t>(d.output_width) * d.output_components));
  JSAMPROW line = row;
  while (d.output_scanline < d.output_height) {
    jpeg_read_scanlines(&d, &line, 1);
    jpeg_write_scanlines(&c, &line, 1);
  }
  std::free(row);
  row = nullptr;
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  jpeg_finish_decompress(&d);
  jpeg_destroy_decompress(&d);
  return Undamaged(ed, msg);
}

Result<std::vector<uint8_t>> Collect(bool ok, unsigned char* buf, unsigned long len, const char* msg) {
  if (!ok) {
    std::free(buf);
    return Corrupt(std::string("libjpeg: ") + msg);
  }
  std::vector<uint8_t> v(buf, buf + len);
  std::free(buf);
  return v;
}

}  // namespace

Result<std::vector<uint8_t>> JpegToBaseline(const uint8_t* data, size_t n) {
  unsigned char* buf = nullptr;
  unsigned long len = 0;
  char msg[JMSG_LENGTH_MAX] = {0};
  bool ok = Transcode(data, n, &buf, &len, msg);
  return Collect(ok, buf, len, msg);
}

Result<std::vector<uint8_t>> JpegResizeToFit(const uint8_t* data, size_t n, int64_t max_w, int64_t max_h, int quality) {
  if (max_w <= 0 || max_h <= 0) return InvalidArgument("resize target must be positive");
  unsigned char* buf = nullptr;
  unsigned long len = 0;
  char msg[JMSG_LENGTH_MAX] = {0};
  bool ok = Resize(data, n, max_w, max_h, quality, &buf, &len, msg);
  return Collect(ok, buf, len, msg);
}

}  // namespace edgedecode::doctor
