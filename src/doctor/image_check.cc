// Each decoder runs on an in-memory buffer with its error hooks routed into a per-call context, so
// messages and byte offsets come from the decoder itself. setjmp/longjmp (libjpeg, libpng) only cross
// frames holding plain C state.
#include "doctor/image_check.h"

#include "doctor/image_offsets.h"

#include <algorithm>
#include <csetjmp>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <utility>

#include <gif_lib.h>
#include <jpeglib.h>
#include <jerror.h>
#include <png.h>
#include <tiffio.h>
#include <webp/decode.h>
#include <webp/demux.h>

namespace edgedecode::doctor {
namespace {

Finding Make(FindingCode code, std::string msg, int64_t offset = -1,
             Severity sev = Severity::kError) {
  Finding f;
  f.code = code;
  f.message = std::move(msg);
  f.offset = offset;
  f.severity = sev;
  return f;
}

uint32_t Le32(const uint8_t* p) {
  return p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24;
}
uint16_t Le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }

// Images over the pixel limits (image_check.h) are not decoded (a decompression bomb costs memory and
// time); the header checks still run.
Finding TooLarge(int64_t w, int64_t h, int64_t limit, const char* why) {
  return Make(FindingCode::kUnsupportedVariant,
              "image too large to decode safely: " + std::to_string(w) + "x" + std::to_string(h) + " = " +
                  std::to_string(w * h) + " pixels, over the limit of " + std::to_string(limit) + " (" + why + ")");
}

// Room for one more decoder message; counts the ones past the cap.
bool RoomForMessage(ImageCheck* out) {
  if (out->findings.size() < kMaxDecoderMessages) return true;
  ++out->messages_not_listed;
  return false;
}

// ---------------------------------------------------------------- JPEG
struct JpegCtx {
  jpeg_error_mgr mgr;
  jmp_buf jump;
  const uint8_t* base;
  size_t n;
  ImageCheck* out;
  JSAMPLE* line;  // malloc'd output row for the last scanline, freed on both exits of DecodeJpeg
};

int64_t JpegOffset(j_common_ptr c) {
  auto* d = reinterpret_cast<j_decompress_ptr>(c);
  auto* ctx = reinterpret_cast<JpegCtx*>(c->err);
  if (!d->src) return -1;
  int64_t off = d->src->next_input_byte - ctx->base;
  return (off >= 0 && off <= static_cast<int64_t>(ctx->n)) ? off : -1;
}

std::string JpegMessage(j_common_ptr c) {
  char buf[JMSG_LENGTH_MAX];
  c->err->format_message(c, buf);
  return std::string("libjpeg: ") + buf;
}

void JpegEmit(j_common_ptr c, int level) {
  if (level != -1) return;  // trace messages
  auto* ctx = reinterpret_cast<JpegCtx*>(c->err);
  if (!RoomForMessage(ctx->out)) return;  // one corrupt stream can warn thousands of times
  const int code = c->err->msg_code;
  FindingCode cls = FindingCode::kDecoderWarning;
  Severity sev = Severity::kWarning;
  if (code == JWRN_JPEG_EOF) { cls = FindingCode::kTruncated; sev = Severity::kError; }
  else if (code == JWRN_EXTRANEOUS_DATA || code == JWRN_HIT_MARKER || code == JWRN_MUST_RESYNC ||
           code == JWRN_NOT_SEQUENTIAL || code == JWRN_BOGUS_PROGRESSION ||
           code == JWRN_HUFF_BAD_CODE || code == JWRN_ARITH_BAD_CODE || code == JWRN_BOGUS_ICC) {
    cls = FindingCode::kCorrupt; sev = Severity::kError;
  }
  // The mem source reports EOF when it runs dry: that is the end of the file. Extraneous bytes are
  // reported when the marker after them is found (the source is synced at its 0xFF): they start
  // that many bytes earlier. Other warnings: the source position when libjpeg reported, which for
  // entropy-decoder warnings may run up to 8 bytes ahead (libjpeg-turbo's 64-bit bit buffer).
  int64_t off = code == JWRN_JPEG_EOF ? static_cast<int64_t>(ctx->n) : JpegOffset(c);
  if (code == JWRN_EXTRANEOUS_DATA && off >= 0) off = std::max<int64_t>(0, off - c->err->msg_parm.i[0]);
  ctx->out->findings.push_back(Make(cls, JpegMessage(c) + " (libjpeg succeeds on this)", off, sev));
}

// Progressive files can carry any number of scans, each a pass over the whole image: thousands of
// empty scans cost minutes. Stops after kMaxJpegScans, as libjpeg-turbo's djpeg -maxscans does.
struct JpegProgress {
  jpeg_progress_mgr pub;
  JpegCtx* ctx;
};

void JpegScanLimit(j_common_ptr c) {
  auto* d = reinterpret_cast<j_decompress_ptr>(c);
  if (d->input_scan_number <= kMaxJpegScans) return;
  auto* ctx = reinterpret_cast<JpegProgress*>(c->progress)->ctx;
  ctx->out->findings.push_back(Make(FindingCode::kUnsupportedVariant,
                                    "JPEG has more than " + std::to_string(kMaxJpegScans) +
                                        " scans (progressive files have about 10): not decoded further",
                                    JpegOffset(c)));
  std::longjmp(ctx->jump, 1);
}

void JpegExit(j_common_ptr c) {
  auto* ctx = reinterpret_cast<JpegCtx*>(c->err);
  const int code = c->err->msg_code;
  FindingCode cls = FindingCode::kCorrupt;
  if (code == JERR_INPUT_EMPTY || code == JERR_INPUT_EOF) cls = FindingCode::kTruncated;
  else if (code == JERR_BAD_PRECISION || code == JERR_ARITH_NOTIMPL || code == JERR_NOT_COMPILED ||
           code == JERR_SOF_UNSUPPORTED || code == JERR_CCIR601_NOTIMPL || code == JERR_NO_BACKING_STORE ||
           code == JERR_OUT_OF_MEMORY)
    cls = FindingCode::kUnsupportedVariant;
  ctx->out->findings.push_back(Make(cls, JpegMessage(c), JpegOffset(c)));
  std::longjmp(ctx->jump, 1);
}

void FillJpegInfo(jpeg_decompress_struct* d, ImageInfo* info) {
  info->width = d->image_width;
  info->height = d->image_height;
  info->bit_depth = d->data_precision;
  info->progressive = d->progressive_mode;
  info->arithmetic = d->arith_code;
  info->cmyk = d->jpeg_color_space == JCS_CMYK || d->jpeg_color_space == JCS_YCCK;
  if (d->num_components == 1) info->subsampling = "4:0:0";  // grey, as docs/profiles.md names it
  else if (d->num_components >= 3 && d->comp_info) {
    int h = d->comp_info[0].h_samp_factor, v = d->comp_info[0].v_samp_factor;
    bool chroma_11 = d->comp_info[1].h_samp_factor == 1 && d->comp_info[1].v_samp_factor == 1 &&
                     d->comp_info[2].h_samp_factor == 1 && d->comp_info[2].v_samp_factor == 1;
    if (!chroma_11) info->subsampling = "other";
    else if (h == 1 && v == 1) info->subsampling = "4:4:4";
    else if (h == 2 && v == 1) info->subsampling = "4:2:2";
    else if (h == 2 && v == 2) info->subsampling = "4:2:0";
    else if (h == 1 && v == 2) info->subsampling = "4:4:0";
    else if (h == 4 && v == 1) info->subsampling = "4:1:1";
    else info->subsampling = "other";
  }
}

// Kept out of line so the C++ objects of the caller are not in the setjmp frame.
void DecodeJpeg(const uint8_t* data, size_t n, ImageCheck* out) {
  jpeg_decompress_struct d;
  JpegCtx ctx;
  std::memset(&d, 0, sizeof d);
  d.err = jpeg_std_error(&ctx.mgr);
  ctx.mgr.emit_message = JpegEmit;
  ctx.mgr.error_exit = JpegExit;
  ctx.base = data;
  ctx.n = n;
  ctx.out = out;
  ctx.line = nullptr;
  JpegProgress progress;
  std::memset(&progress, 0, sizeof progress);
  progress.pub.progress_monitor = JpegScanLimit;
  progress.ctx = &ctx;
  if (setjmp(ctx.jump)) {
    std::free(ctx.line);
    if (d.image_width) FillJpegInfo(&d, &out->info);
    jpeg_destroy_decompress(&d);
    return;
  }
  jpeg_create_decompress(&d);
  d.progress = &progress.pub;  // after jpeg_create_decompress, which clears the struct
  // A second guard behind the pixel limits: libjpeg fails instead of allocating past this.
  d.mem->max_memory_to_use = 1L << 30;
  jpeg_mem_src(&d, data, static_cast<unsigned long>(n));
  jpeg_read_header(&d, TRUE);
  FillJpegInfo(&d, &out->info);
  // Multi-scan files are decoded into whole-image coefficient arrays (up to 8 bytes a pixel).
  const bool whole = jpeg_has_multiple_scans(&d);
  const int64_t limit = whole ? kMaxPixelsInMemory : kMaxPixels;
  if (static_cast<int64_t>(d.image_width) * d.image_height > limit) {
    out->findings.push_back(TooLarge(d.image_width, d.image_height, limit,
                                     whole ? "a multi-scan JPEG is held whole in memory" : "JPEG"));
    jpeg_destroy_decompress(&d);
    return;
  }
  // Every entropy-coded bit goes through libjpeg's Huffman/arithmetic decoder (that is where
  // corrupt and truncated data show up); the IDCT and colour conversion after it cannot fail, so
  // they are skipped where libjpeg-turbo allows it:
  // - single-scan (baseline) files: jpeg_skip_scanlines entropy-decodes each skipped iMCU row into
  //   nothing, so no whole-image buffer is allocated and zeroed; it does not decode a skip that
  //   reaches the last line, so the last line is read for real (one iMCU row of IDCT);
  // - multi-scan (progressive) files need every scan before any pixel: jpeg_read_coefficients
  //   decodes them into the coefficient arrays, still without IDCT.
  if (jpeg_has_multiple_scans(&d) || d.image_height == 0) {
    jpeg_read_coefficients(&d);
  } else {
    jpeg_start_decompress(&d);
    if (d.output_height > 1) jpeg_skip_scanlines(&d, d.output_height - 1);
    ctx.line = static_cast<JSAMPLE*>(std::malloc(static_cast<size_t>(d.output_width) * d.output_components + 16));
    JSAMPROW row = ctx.line;
    while (d.output_scanline < d.output_height) jpeg_read_scanlines(&d, &row, 1);
  }
  jpeg_finish_decompress(&d);
  std::free(ctx.line);
  jpeg_destroy_decompress(&d);
  out->info.decoded = true;
}

// ---------------------------------------------------------------- PNG
struct PngCtx {
  const uint8_t* data;
  size_t n;
  size_t pos;
  bool eof;
  jmp_buf jump;
  ImageCheck* out;
  size_t alloc_cap;  // PngMalloc refuses larger blocks
};

// Every allocation libpng makes goes through here. It sizes an ancillary chunk's buffer (zTXt, iCCP, ...) by
// the length its header claims, before reading it (a 38 KB file claimed a 2 GB zTXt chunk): a block over the
// cap fails, and libpng reports it as an error of the file.
png_voidp PngMalloc(png_structp png, png_alloc_size_t size) {
  const auto* ctx = static_cast<const PngCtx*>(png_get_mem_ptr(png));
  return size > ctx->alloc_cap ? nullptr : std::malloc(size);
}
void PngFree(png_structp, png_voidp p) { std::free(p); }

void PngRead(png_structp png, png_bytep dst, png_size_t len) {
  auto* ctx = static_cast<PngCtx*>(png_get_io_ptr(png));
  if (len > ctx->n - ctx->pos) {
    ctx->eof = true;
    png_error(png, "unexpected end of file");
  }
  std::memcpy(dst, ctx->data + ctx->pos, len);
  ctx->pos += len;
}

void PngError(png_structp png, png_const_charp msg) {
  auto* ctx = static_cast<PngCtx*>(png_get_error_ptr(png));
  FindingCode cls = ctx->eof ? FindingCode::kTruncated : FindingCode::kCorrupt;
  if (!ctx->eof && (std::strstr(msg, "exceeds user limit") || std::strstr(msg, "too large")))
    cls = FindingCode::kUnsupportedVariant;
  {  // scoped: longjmp must not skip a std::string destructor
    std::string m = std::string("libpng: ") + msg;
    if (std::strstr(msg, "CgBI")) {  // Apple's iOS-optimised PNG: byte-swapped, raw deflate
      cls = FindingCode::kUnsupportedVariant;
      m += " (Apple CgBI PNG from an iOS app bundle; convert with pngcrush -revert-iphone-optimizations)";
    }
    ctx->out->findings.push_back(Make(cls, m, static_cast<int64_t>(ctx->pos)));
  }
  std::longjmp(ctx->jump, 1);
}

void PngWarn(png_structp png, png_const_charp msg) {
  auto* ctx = static_cast<PngCtx*>(png_get_error_ptr(png));
  if (!RoomForMessage(ctx->out)) return;
  // A CRC error in an ancillary chunk is data damage libpng forgives; other warnings are notes.
  bool crc = std::strstr(msg, "CRC") != nullptr;
  ctx->out->findings.push_back(Make(crc ? FindingCode::kCorrupt : FindingCode::kDecoderWarning,
                                    std::string("libpng warning: ") + msg,
                                    static_cast<int64_t>(ctx->pos),
                                    crc ? Severity::kError : Severity::kWarning));
}

void DecodePng(const uint8_t* data, size_t n, ImageCheck* out) {
  // No chunk is larger than the file; row buffers and zlib's state stay far below 64 MiB.
  PngCtx ctx{data, n, 0, false, {}, out, std::max<size_t>(size_t{64} << 20, 2 * n)};
  if (n < 8 || png_sig_cmp(data, 0, 8) != 0) {
    size_t bad = 0;
    static const uint8_t kSig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    while (bad < 8 && bad < n && data[bad] == kSig[bad]) ++bad;
    out->findings.push_back(Make(n < 8 ? FindingCode::kTruncated : FindingCode::kCorrupt,
                                 "PNG signature damaged at byte " + std::to_string(bad) +
                                     " (a text-mode transfer rewrites CR/LF bytes like this)",
                                 static_cast<int64_t>(bad)));
    return;
  }
  png_structp png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, &ctx, PngError, PngWarn, &ctx, PngMalloc, PngFree);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    out->findings.push_back(Make(FindingCode::kCorrupt, "libpng: out of memory"));
    png_destroy_read_struct(&png, nullptr, nullptr);
    return;
  }
  // volatile: set after setjmp and read after libpng's longjmp, where a register copy would be stale (the
  // row buffer leaked on every file whose rows fail to decode).
  png_bytep volatile row = nullptr;
  if (setjmp(ctx.jump)) {
    std::free(row);
    png_destroy_read_struct(&png, &info, nullptr);
    return;
  }
  png_set_read_fn(png, &ctx, PngRead);
  png_set_crc_action(png, PNG_CRC_ERROR_QUIT, PNG_CRC_WARN_DISCARD);
  png_read_info(png, info);
  out->info.width = png_get_image_width(png, info);
  out->info.height = png_get_image_height(png, info);
  out->info.bit_depth = png_get_bit_depth(png, info);
  out->info.progressive = png_get_interlace_type(png, info) != PNG_INTERLACE_NONE;
  if (out->info.width * out->info.height > kMaxPixels) {
    out->findings.push_back(TooLarge(out->info.width, out->info.height, kMaxPixels, "PNG"));
    png_destroy_read_struct(&png, &info, nullptr);
    return;
  }
  int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  row = static_cast<png_bytep>(std::malloc(png_get_rowbytes(png, info) + 16));
  for (int p = 0; p < passes; ++p)
    for (int64_t y = 0; y < out->info.height; ++y) png_read_row(png, row, nullptr);
  png_read_end(png, info);
  std::free(row);
  row = nullptr;
  png_destroy_read_struct(&png, &info, nullptr);
  out->info.decoded = true;
}

// ---------------------------------------------------------------- WebP
void DecodeWebp(const uint8_t* data, size_t n, ImageCheck* out) {
  if (n >= 12) {
    uint64_t riff = static_cast<uint64_t>(Le32(data + 4)) + 8;
    if (riff > n) {
      out->findings.push_back(Make(FindingCode::kTruncated,
                                   "RIFF header says " + std::to_string(riff) + " bytes, file has " +
                                       std::to_string(n),
                                   static_cast<int64_t>(n)));
    }
  }
  WebPBitstreamFeatures feat;
  VP8StatusCode st = WebPGetFeatures(data, n, &feat);
  auto classify = [](VP8StatusCode s) {
    switch (s) {
      case VP8_STATUS_NOT_ENOUGH_DATA: return FindingCode::kTruncated;
      case VP8_STATUS_UNSUPPORTED_FEATURE: return FindingCode::kUnsupportedVariant;
      default: return FindingCode::kCorrupt;
    }
  };
  if (st != VP8_STATUS_OK) {
    if (out->findings.empty())
      out->findings.push_back(Make(classify(st), "libwebp: WebPGetFeatures status " + std::to_string(st)));
    return;
  }
  out->info.width = feat.width;
  out->info.height = feat.height;
  // libwebp decodes into a whole-image RGBA buffer (and lossless into a second one of 4 bytes a pixel;
  // an animation into canvas buffers): the size comes from the header, before anything is allocated.
  const int64_t pixels = static_cast<int64_t>(feat.width) * feat.height;
  const int64_t limit = feat.has_animation ? kMaxAnimationCanvasPixels : kMaxPixelsInMemory;
  if (pixels > limit) {
    out->findings.push_back(TooLarge(feat.width, feat.height, limit,
                                     feat.has_animation ? "a WebP animation's canvas is held whole in memory"
                                                        : "WebP is decoded whole in memory"));
    return;
  }
  if (feat.has_animation) {
    WebPData wd{data, n};
    WebPAnimDecoderOptions opt;
    WebPAnimDecoderOptionsInit(&opt);
    WebPAnimDecoder* dec = WebPAnimDecoderNew(&wd, &opt);
    if (!dec) {
      out->findings.push_back(Make(FindingCode::kCorrupt, "libwebp: cannot parse animated WebP container"));
      return;
    }
    WebPAnimInfo ai;
    WebPAnimDecoderGetInfo(dec, &ai);
    // Each frame is composited over the whole canvas: many frames on a big canvas cost minutes.
    if (static_cast<int64_t>(ai.frame_count) * pixels > kMaxAnimationWork) {
      out->findings.push_back(Make(FindingCode::kUnsupportedVariant,
                                   "WebP animation of " + std::to_string(ai.frame_count) + " frames on a " +
                                       std::to_string(feat.width) + "x" + std::to_string(feat.height) +
                                       " canvas: frames x canvas pixels is over the limit of " +
                                       std::to_string(kMaxAnimationWork) + "; not decoded"));
      WebPAnimDecoderDelete(dec);
      return;
    }
    int frames = 0;
    while (WebPAnimDecoderHasMoreFrames(dec)) {
      uint8_t* buf;
      int ts;
      if (!WebPAnimDecoderGetNext(dec, &buf, &ts)) {
        out->findings.push_back(Make(FindingCode::kCorrupt, "libwebp: frame " + std::to_string(frames) + " failed to decode"));
        WebPAnimDecoderDelete(dec);
        return;
      }
      ++frames;
    }
    out->info.frames = frames;
    WebPAnimDecoderDelete(dec);
    out->info.decoded = out->findings.empty();
    return;
  }
  int w, h;
  uint8_t* px = WebPDecodeRGBA(data, n, &w, &h);
  if (!px) {
    // Ask again for the status code to classify.
    WebPDecoderConfig cfg;
    WebPInitDecoderConfig(&cfg);
    VP8StatusCode s2 = WebPDecode(data, n, &cfg);
    WebPFreeDecBuffer(&cfg.output);
    if (out->findings.empty() || s2 != VP8_STATUS_NOT_ENOUGH_DATA)
      out->findings.push_back(Make(classify(s2), "libwebp: decode failed, status " + std::to_string(s2)));
    return;
  }
  WebPFree(px);
  out->info.decoded = out->findings.empty();
}

// ---------------------------------------------------------------- GIF
struct GifCtx {
  const uint8_t* data;
  size_t n, pos;
  bool eof;
};

int GifRead(GifFileType* g, GifByteType* dst, int len) {
  auto* ctx = static_cast<GifCtx*>(g->UserData);
  size_t take = std::min<size_t>(len, ctx->n - ctx->pos);
  if (take < static_cast<size_t>(len)) ctx->eof = true;
  std::memcpy(dst, ctx->data + ctx->pos, take);
  ctx->pos += take;
  return static_cast<int>(take);
}

void DecodeGif(const uint8_t* data, size_t n, ImageCheck* out) {
  GifCtx ctx{data, n, 0, false};
  int err = 0;
  GifFileType* g = DGifOpen(&ctx, GifRead, &err);
  auto fail = [&](int code) {
    FindingCode cls = ctx.eof || code == D_GIF_ERR_READ_FAILED ? FindingCode::kTruncated : FindingCode::kCorrupt;
    const char* m = GifErrorString(code);
    out->findings.push_back(Make(cls, std::string("giflib: ") + (m ? m : "error"),
                                 static_cast<int64_t>(ctx.pos)));
  };
  if (!g) {
    fail(err);
    return;
  }
  out->info.width = g->SWidth;
  out->info.height = g->SHeight;
  std::vector<GifPixelType> line;
  int frames = 0;
  GifRecordType rec;
  bool ok = true;
  do {
    if (DGifGetRecordType(g, &rec) == GIF_ERROR) { ok = false; break; }
    if (rec == IMAGE_DESC_RECORD_TYPE) {
      if (DGifGetImageDesc(g) == GIF_ERROR) { ok = false; break; }
      const GifImageDesc& im = g->Image;
      if (im.Left + im.Width > g->SWidth || im.Top + im.Height > g->SHeight) {
        out->findings.push_back(Make(FindingCode::kCorrupt,
            "frame " + std::to_string(frames) + " (" + std::to_string(im.Width) + "x" +
            std::to_string(im.Height) + " at " + std::to_string(im.Left) + "," + std::to_string(im.Top) +
            ") extends past the " + std::to_string(g->SWidth) + "x" + std::to_string(g->SHeight) +
            " screen", static_cast<int64_t>(ctx.pos)));
      }
      if (static_cast<int64_t>(im.Width) * im.Height > kMaxPixels) {
        out->findings.push_back(Make(FindingCode::kUnsupportedVariant, "frame too large to decode safely"));
        DGifCloseFile(g, &err);
        return;
      }
      if (!g->Image.ColorMap && !g->SColorMap)
        out->findings.push_back(Make(FindingCode::kDecoderWarning, "frame " + std::to_string(frames) +
                                     " has no colour table (neither local nor global)", -1,
                                     Severity::kWarning));
      line.resize(std::max(1, im.Width));
      for (int y = 0; y < im.Height && ok; ++y)
        if (DGifGetLine(g, line.data(), im.Width) == GIF_ERROR) ok = false;
      ++frames;
    } else if (rec == EXTENSION_RECORD_TYPE) {
      int ext_code;
      GifByteType* ext;
      if (DGifGetExtension(g, &ext_code, &ext) == GIF_ERROR) { ok = false; break; }
      while (ext) {
        if (DGifGetExtensionNext(g, &ext) == GIF_ERROR) { ok = false; break; }
      }
    }
  } while (ok && rec != TERMINATE_RECORD_TYPE);
  if (!ok) fail(g->Error);
  out->info.frames = frames;
  if (ok && frames == 0) out->findings.push_back(Make(FindingCode::kCorrupt, "GIF has no image frames"));
  DGifCloseFile(g, &err);
  out->info.decoded = ok && frames > 0;
}

// ---------------------------------------------------------------- TIFF
struct TiffCtx {
  const uint8_t* data;
  size_t n;
  uint64_t pos;
  ImageCheck* out;
  int errors;
};

tmsize_t TiffRead(thandle_t h, void* buf, tmsize_t len) {
  auto* c = static_cast<TiffCtx*>(h);
  if (c->pos >= c->n) return 0;
  tmsize_t take = std::min<uint64_t>(len, c->n - c->pos);
  std::memcpy(buf, c->data + c->pos, take);
  c->pos += take;
  return take;
}
tmsize_t TiffWrite(thandle_t, void*, tmsize_t) { return 0; }
toff_t TiffSeek(thandle_t h, toff_t off, int whence) {
  auto* c = static_cast<TiffCtx*>(h);
  uint64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? c->pos : c->n;
  c->pos = base + off;
  return c->pos;
}
int TiffClose(thandle_t) { return 0; }
toff_t TiffSize(thandle_t h) { return static_cast<TiffCtx*>(h)->n; }
int TiffMap(thandle_t h, void** base, toff_t* size) {
  auto* c = static_cast<TiffCtx*>(h);
  *base = const_cast<uint8_t*>(c->data);
  *size = c->n;
  return 1;
}
void TiffUnmap(thandle_t, void*, toff_t) {}

std::string Vformat(const char* fmt, va_list ap) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  return buf;
}

int TiffErr(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* c = static_cast<TiffCtx*>(user);
  if (++c->errors > 10 || !RoomForMessage(c->out)) {
    if (c->errors > 10) ++c->out->messages_not_listed;
    return 1;
  }
  std::string m = Vformat(fmt, ap);
  FindingCode cls = FindingCode::kCorrupt;
  if (m.find("Read error") != std::string::npos || m.find("EOF") != std::string::npos ||
      m.find("past end") != std::string::npos || m.find("Cannot read") != std::string::npos)
    cls = FindingCode::kTruncated;
  else if (m.find("not configured") != std::string::npos || m.find("not supported") != std::string::npos ||
           m.find("Unsupported") != std::string::npos)
    cls = FindingCode::kUnsupportedVariant;
  c->out->findings.push_back(Make(cls, std::string("libtiff: ") + (module ? module : "") + ": " + m));
  return 1;
}
int TiffWarn(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* c = static_cast<TiffCtx*>(user);
  // Unknown tags are normal in the wild; do not report them.
  std::string m = Vformat(fmt, ap);
  if (m.find("Unknown field") != std::string::npos || !RoomForMessage(c->out)) return 1;
  c->out->findings.push_back(Make(FindingCode::kDecoderWarning, std::string("libtiff warning: ") +
                                  (module ? module : "") + ": " + m, -1, Severity::kWarning));
  return 1;
}

void DecodeTiff(const uint8_t* data, size_t n, ImageCheck* out) {
  TiffCtx ctx{data, n, 0, out, 0};
  TIFFOpenOptions* opts = TIFFOpenOptionsAlloc();
  TIFFOpenOptionsSetErrorHandlerExtR(opts, TiffErr, &ctx);
  TIFFOpenOptionsSetWarningHandlerExtR(opts, TiffWarn, &ctx);
  TIFFOpenOptionsSetMaxSingleMemAlloc(opts, kMaxTiffChunkBytes);
  TIFF* t = TIFFClientOpenExt("mem", "rm", &ctx, TiffRead, TiffWrite, TiffSeek, TiffClose, TiffSize,
                              TiffMap, TiffUnmap, opts);
  TIFFOpenOptionsFree(opts);
  if (!t) {
    if (out->findings.empty()) out->findings.push_back(Make(FindingCode::kCorrupt, "libtiff: cannot open"));
    return;
  }
  int dirs = 0;
  bool ok = true;
  std::vector<uint8_t> buf;
  do {
    uint32_t w = 0, h = 0;
    uint16_t bps = 1, photometric = 0;
    TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h);
    TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bps);
    TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &photometric);
    if (dirs == 0) {
      out->info.width = w;
      out->info.height = h;
      out->info.bit_depth = bps;
      out->info.cmyk = photometric == PHOTOMETRIC_SEPARATED;
    }
    if (static_cast<int64_t>(w) * h > kMaxPixels) {
      out->findings.push_back(TooLarge(w, h, kMaxPixels, "TIFF"));
      ok = false;
      break;
    }
    const bool tiled = TIFFIsTiled(t);
    const uint32_t count = tiled ? TIFFNumberOfTiles(t) : TIFFNumberOfStrips(t);
    // The 64-bit sizes: the tile and sample fields are independent of the image size, so a tiny file can
    // ask for a terabyte per tile (and TIFFTileSize would wrap or fail on it).
    const uint64_t sz64 = tiled ? TIFFTileSize64(t) : TIFFStripSize64(t);
    if (sz64 > static_cast<uint64_t>(kMaxTiffChunkBytes)) {
      out->findings.push_back(Make(FindingCode::kUnsupportedVariant,
                                   std::string("TIFF ") + (tiled ? "tile" : "strip") + " of " + std::to_string(sz64) +
                                       " bytes decoded, over the limit of " + std::to_string(kMaxTiffChunkBytes) +
                                       " (directory " + std::to_string(dirs) + "): not decoded"));
      ok = false;
      break;
    }
    const tmsize_t sz = static_cast<tmsize_t>(sz64);
    if (sz <= 0) { ok = false; if (out->findings.empty()) out->findings.push_back(Make(FindingCode::kCorrupt, "libtiff: zero strip/tile size")); break; }
    buf.resize(sz);
    for (uint32_t i = 0; i < count; ++i) {
      tmsize_t r = tiled ? TIFFReadEncodedTile(t, i, buf.data(), sz) : TIFFReadEncodedStrip(t, i, buf.data(), sz);
      if (r < 0) { ok = false; break; }
    }
    ++dirs;
  } while (ok && dirs < 64 && TIFFReadDirectory(t));
  out->info.frames = dirs;
  TIFFClose(t);
  if (!ok && out->findings.empty()) out->findings.push_back(Make(FindingCode::kCorrupt, "libtiff: strip/tile decode failed"));
  out->info.decoded = ok;
}

// ---------------------------------------------------------------- BMP (header and size checks)
void CheckDib(const uint8_t* data, size_t n, size_t dib_at, uint64_t pixel_at, bool in_ico,
              ImageCheck* out) {
  auto bad = [&](FindingCode cls, std::string m, int64_t off) {
    out->findings.push_back(Make(cls, "BMP: " + m, off));
  };
  if (n < dib_at + 16) return bad(FindingCode::kTruncated, "file ends inside the info header", n);
  uint32_t hs = Le32(data + dib_at);
  if (hs != 12 && hs != 40 && hs != 52 && hs != 56 && hs != 64 && hs != 108 && hs != 124)
    return bad(FindingCode::kCorrupt, "info header size " + std::to_string(hs) + " is not a known version", dib_at);
  if (n < dib_at + hs) return bad(FindingCode::kTruncated, "file ends inside the info header", n);
  int64_t w, h;
  uint16_t planes, bpp;
  uint32_t comp = 0, clr_used = 0;
  if (hs == 12) {
    w = Le16(data + dib_at + 4); h = static_cast<int16_t>(Le16(data + dib_at + 6));
    planes = Le16(data + dib_at + 8); bpp = Le16(data + dib_at + 10);
  } else {
    w = static_cast<int32_t>(Le32(data + dib_at + 4)); h = static_cast<int32_t>(Le32(data + dib_at + 8));
    planes = Le16(data + dib_at + 12); bpp = Le16(data + dib_at + 14);
    comp = Le32(data + dib_at + 16);
    clr_used = Le32(data + dib_at + 32);
  }
  if (in_ico) h /= 2;  // ICO DIBs carry the AND mask in the height
  out->info.width = w;
  out->info.height = h < 0 ? -h : h;
  out->info.bit_depth = bpp;
  if (planes != 1) return bad(FindingCode::kCorrupt, "planes is " + std::to_string(planes) + ", must be 1", dib_at + 12);
  if (bpp != 1 && bpp != 2 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32 && bpp != 64)
    return bad(FindingCode::kCorrupt, "bit count " + std::to_string(bpp) + " is invalid", dib_at + 14);
  if (w <= 0 || h == 0) return bad(FindingCode::kCorrupt, "width/height " + std::to_string(w) + "x" + std::to_string(h) + " is invalid", dib_at + 4);
  if ((comp == 1 || comp == 2) && h < 0)
    return bad(FindingCode::kCorrupt, "RLE bitmaps cannot be top-down (negative height)", dib_at + 8);
  if ((comp == 1 && bpp != 8) || (comp == 2 && bpp != 4))
    return bad(FindingCode::kCorrupt, "RLE compression " + std::to_string(comp) + " with bit count " + std::to_string(bpp), dib_at + 16);
  if (comp > 6 && comp != 11 && comp != 12 && comp != 13)
    return bad(FindingCode::kUnsupportedVariant, "compression " + std::to_string(comp), dib_at + 16);
  if (bpp <= 8 && clr_used > (1u << bpp))
    return bad(FindingCode::kCorrupt, "palette of " + std::to_string(clr_used) + " colours for " + std::to_string(bpp) + "-bit pixels", dib_at + 32);
  if (out->info.width * out->info.height > kMaxPixels)
    return bad(FindingCode::kUnsupportedVariant, "image too large (" + std::to_string(w) + "x" + std::to_string(h) + ")", dib_at + 4);
  if (comp == 0 || comp == 3 || comp == 6) {
    uint64_t stride = ((static_cast<uint64_t>(w) * bpp + 31) / 32) * 4;
    uint64_t need = pixel_at + stride * static_cast<uint64_t>(out->info.height);
    if (need > n)
      return bad(FindingCode::kTruncated, "pixel data needs " + std::to_string(need) + " bytes, file has " + std::to_string(n), n);
  } else if (comp == 1 || comp == 2) {
    // Walk the RLE stream: every run must stay inside the image.
    uint64_t p = pixel_at;
    int64_t x = 0, y = 0;
    const int64_t H = out->info.height;
    while (true) {
      if (p + 2 > n) return bad(FindingCode::kTruncated, "RLE data ends before end-of-bitmap", n);
      uint8_t a = data[p], b = data[p + 1];
      p += 2;
      if (a > 0) { x += a; }
      else if (b == 0) { x = 0; ++y; }
      else if (b == 1) break;
      else if (b == 2) { if (p + 2 > n) return bad(FindingCode::kTruncated, "RLE delta cut off", n); x += data[p]; y += data[p + 1]; p += 2; }
      else { uint64_t bytes = comp == 1 ? b : (b + 1) / 2; p += (bytes + 1) & ~uint64_t{1}; x += b; }
      if (x > w || y > H) return bad(FindingCode::kCorrupt, "RLE run writes outside the image", static_cast<int64_t>(p));
    }
  }
  if (!in_ico) out->info.decoded = true;
}

void CheckBmp(const uint8_t* data, size_t n, ImageCheck* out) {
  if (n < 26) { out->findings.push_back(Make(FindingCode::kTruncated, "BMP: file ends inside the file header", n)); return; }
  uint32_t file_size = Le32(data + 2), off = Le32(data + 10);
  size_t before = out->findings.size();
  if (off >= n) { out->findings.push_back(Make(FindingCode::kTruncated, "BMP: pixel data offset " + std::to_string(off) + " is past the end of the file (" + std::to_string(n) + " bytes)", 10)); return; }
  CheckDib(data, n, 14, off, false, out);
  if (out->findings.size() == before && file_size != n && file_size != 0)
    out->findings.push_back(Make(FindingCode::kDecoderWarning, "BMP: header says file size " + std::to_string(file_size) + ", actual " + std::to_string(n), 2, Severity::kWarning));
}

void CheckIco(const uint8_t* data, size_t n, ImageCheck* out) {
  uint16_t count = Le16(data + 4);
  if (n < 6 + 16ull * count) { out->findings.push_back(Make(FindingCode::kTruncated, "ICO: directory of " + std::to_string(count) + " entries is cut off", n)); return; }
  // Entries may share a payload (65,535 entries can point at one image): each distinct payload is
  // decoded once, and at most kMaxIcoEntriesChecked of them; the rest are counted in one finding.
  std::set<std::pair<uint32_t, uint32_t>> seen;  // (offset, size)
  int shared = 0, unchecked = 0;
  for (int i = 0; i < count; ++i) {
    const uint8_t* e = data + 6 + 16 * i;
    uint32_t size = Le32(e + 8), off = Le32(e + 12);
    if (static_cast<uint64_t>(off) + size > n) {
      out->findings.push_back(Make(FindingCode::kTruncated, "ICO: entry " + std::to_string(i) + " (" + std::to_string(size) + " bytes at " + std::to_string(off) + ") runs past the end", 6 + 16 * i));
      return;
    }
    if (!seen.insert({off, size}).second) { ++shared; continue; }
    if (static_cast<int>(seen.size()) > kMaxIcoEntriesChecked) { ++unchecked; continue; }
    const uint8_t* img = data + off;
    if (size >= 8 && png_sig_cmp(img, 0, 8) == 0) {
      ImageCheck sub;
      DecodePng(img, size, &sub);
      for (Finding& f : sub.findings) { f.message = "ICO entry " + std::to_string(i) + ": " + f.message; if (f.offset >= 0) f.offset += off; out->findings.push_back(f); }
      out->messages_not_listed += sub.messages_not_listed;
      if (i == 0) out->info = sub.info;
    } else {
      ImageCheck sub;
      // The header size field is read only when the entry holds it (an empty entry may sit at the end).
      CheckDib(img, size, 0, size >= 4 ? Le32(img) : 0, true, &sub);  // pixel check skipped for palettes
      for (Finding& f : sub.findings) { if (f.code == FindingCode::kTruncated && f.message.find("pixel data") != std::string::npos) continue; f.message = "ICO entry " + std::to_string(i) + ": " + f.message; if (f.offset >= 0) f.offset += off; out->findings.push_back(f); }
      if (i == 0) out->info = sub.info;
    }
  }
  if (unchecked)
    out->findings.push_back(Make(FindingCode::kUnsupportedVariant,
                                 "ICO: " + std::to_string(count) + " entries; the first " +
                                     std::to_string(kMaxIcoEntriesChecked) + " distinct images were checked, " +
                                     std::to_string(unchecked) + " more were not (icons have a few dozen at most)",
                                 4));
  else if (shared)
    out->findings.push_back(Make(FindingCode::kDecoderWarning,
                                 "ICO: " + std::to_string(shared) + " of " + std::to_string(count) +
                                     " entries repeat an earlier entry's image (checked once)",
                                 4, Severity::kWarning));
  out->info.format = Format::kIco;
  out->info.frames = count;
  out->info.decoded = out->findings.empty();
}

// ---------------------------------------------------------------- PNM
void CheckPnm(const uint8_t* data, size_t n, ImageCheck* out) {
  size_t p = 2;
  auto next = [&](int64_t* v) {
    while (p < n) {
      if (data[p] == '#') { while (p < n && data[p] != '\n') ++p; }
      else if (std::isspace(data[p])) ++p;
      else break;
    }
    size_t start = p;
    bool neg = p < n && data[p] == '-';
    if (neg) ++p;
    int64_t x = 0;
    while (p < n && std::isdigit(data[p]) && x < (int64_t{1} << 40)) x = x * 10 + (data[p++] - '0');
    if (p == start || (neg && p == start + 1)) return false;
    *v = neg ? -x : x;
    return true;
  };
  int64_t w, h, maxv = 1;
  char kind = static_cast<char>(data[1]);
  if (kind == '7') { out->findings.push_back(Make(FindingCode::kNoDecoder, "PAM (P7) is not checked", -1, Severity::kInfo)); return; }
  if (!next(&w) || !next(&h) || (kind != '1' && kind != '4' && !next(&maxv))) {
    out->findings.push_back(Make(p >= n ? FindingCode::kTruncated : FindingCode::kCorrupt, "PNM: header is incomplete", p));
    return;
  }
  out->info.width = w; out->info.height = h;
  if (w <= 0 || h <= 0 || maxv <= 0 || maxv > 65535) {
    out->findings.push_back(Make(FindingCode::kCorrupt, "PNM: size " + std::to_string(w) + "x" + std::to_string(h) + " / maxval " + std::to_string(maxv) + " is invalid", 3));
    return;
  }
  if (kind >= '4') {
    // Checked arithmetic: a width and height of 2^32 would wrap the byte count to 0.
    const uint64_t ch = kind == '6' ? 3 : 1, bytes_per_sample = maxv > 255 ? 2 : 1;
    uint64_t row = 0, need = 0;
    bool wraps = false;
    if (kind == '4') row = (static_cast<uint64_t>(w) + 7) / 8;
    else wraps = __builtin_mul_overflow(static_cast<uint64_t>(w), ch * bytes_per_sample, &row);
    wraps = wraps || __builtin_mul_overflow(row, static_cast<uint64_t>(h), &need) ||
            __builtin_add_overflow(need, static_cast<uint64_t>(p) + 1, &need);
    if (wraps || need > n) {
      out->findings.push_back(Make(FindingCode::kTruncated,
                                   "PNM: pixel data of " + std::to_string(w) + "x" + std::to_string(h) + " needs " +
                                       (wraps ? std::string("more than 2^64") : std::to_string(need)) +
                                       " bytes, file has " + std::to_string(n),
                                   n));
      return;
    }
  }
  out->info.decoded = true;
}

}  // namespace

// After a JPEG decode that failed (say on 12-bit samples, which this libjpeg does not decode): a cut
// file is a second, independent finding, found by walking the markers.
void JpegStructureFindings(const uint8_t* data, size_t n, ImageCheck* out) {
  if (out->info.decoded) return;
  // After a corrupt-data error the walk could be misled by the same damage (a bogus length running
  // past the end reads as a cut); it only adds to decoders that gave up for other reasons.
  for (const Finding& f : out->findings)
    if (f.code == FindingCode::kTruncated || f.code == FindingCode::kCorrupt) return;
  int64_t end = 0;
  std::string why = JpegStructureEnd(data, n, &end);
  if (!why.empty() && why.rfind("no SOI", 0) != 0) out->findings.push_back(Make(FindingCode::kTruncated, "JPEG: " + why, end));
}

// After libpng reported damage: the offset where it lies, from the chunk CRCs and a zlib replay of
// the IDAT stream, and every other damaged chunk (libpng stops at the first).
void PngDamageFindings(const uint8_t* data, size_t n, ImageCheck* out) {
  bool damaged = false;
  for (const Finding& f : out->findings) damaged |= f.code == FindingCode::kCorrupt || f.code == FindingCode::kTruncated;
  if (!damaged) return;
  const std::vector<PngChunk> chunks = PngChunks(data, n);
  std::string zmsg;
  const int64_t zoff = PngInflateFailure(data, chunks, &zmsg);
  auto chunk_at = [&](int64_t off) -> const PngChunk* {
    for (const PngChunk& c : chunks)
      if (off >= static_cast<int64_t>(c.offset) && off < static_cast<int64_t>(c.offset + 12 + c.length)) return &c;
    return nullptr;
  };
  std::vector<size_t> reported;  // chunk offsets already named
  bool have_truncated = false;
  for (Finding& f : out->findings) {
    have_truncated |= f.code == FindingCode::kTruncated;
    if (f.code != FindingCode::kCorrupt) continue;
    if (f.message.find("CRC") != std::string::npos) {
      // libpng checks a CRC after reading the whole chunk: name the chunk, not where reading stopped.
      for (const PngChunk& c : chunks) {
        if (c.crc_ok || !c.complete) continue;
        bool named = false;
        for (size_t r : reported) named |= r == c.offset;
        if (named) continue;
        reported.push_back(c.offset);
        f.offset = static_cast<int64_t>(c.offset);
        f.message += " (chunk " + c.type + " at byte " + std::to_string(c.offset) + ", " + std::to_string(c.length) +
                     " data bytes; its CRC at byte " + std::to_string(c.offset + 8 + c.length) + " does not match)";
        if (c.type == "IDAT" && zoff >= 0 && chunk_at(zoff) == &c) {
          f.offset = zoff;
          f.message += "; zlib's inflate of the image data fails at byte " + std::to_string(zoff) + " (" + zmsg + ")";
        }
        break;
      }
    } else if (f.message.find("bad adaptive filter") != std::string::npos) {
      // zlib is fine, the data is not: the row whose filter byte is invalid, and where it came from.
      int64_t row = -1;
      const int64_t at = PngBadFilterOffset(data, chunks, &row);
      if (at >= 0) {
        f.offset = at;
        f.message += " (row " + std::to_string(row) + "'s filter byte, inflated from about byte " + std::to_string(at) + ")";
        if (const PngChunk* c = chunk_at(at)) {
          reported.push_back(c->offset);
          if (!c->crc_ok) f.message += "; chunk " + c->type + " at byte " + std::to_string(c->offset) + " fails its CRC too";
        }
      }
    } else if (zoff >= 0 && f.message.find("IDAT") != std::string::npos) {
      f.offset = zoff;
      f.message += " (zlib: " + zmsg + "; detected at byte " + std::to_string(zoff) + " of the file)";
      if (const PngChunk* c = chunk_at(zoff)) {
        reported.push_back(c->offset);
        if (!c->crc_ok) f.message += "; chunk " + c->type + " at byte " + std::to_string(c->offset) + " fails its CRC too";
      }
    }
  }
  // Independent damage after the point where libpng stopped.
  for (const PngChunk& c : chunks) {
    bool named = false;
    for (size_t r : reported) named |= r == c.offset;
    if (named) continue;
    if (c.complete && !c.crc_ok && RoomForMessage(out))  // a file of 100,000 bad chunks: counted, not listed
      out->findings.push_back(Make(FindingCode::kCorrupt, "PNG: chunk " + c.type + " at byte " + std::to_string(c.offset) +
                                   ": CRC mismatch (every chunk's CRC is checked here; the decoder stopped before reaching this one)",
                                   static_cast<int64_t>(c.offset)));
    bool letters = c.type.size() == 4;
    for (char ch : c.type) letters &= (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
    // A damaged length field also runs past the end: only a well-formed chunk header counts as a cut.
    if (!c.complete && !have_truncated && letters && c.length < 0x80000000u)
      out->findings.push_back(Make(FindingCode::kTruncated, "PNG: the file ends inside chunk " + c.type + " at byte " +
                                   std::to_string(c.offset) + " (" + std::to_string(c.length) + " data bytes)",
                                   static_cast<int64_t>(n)));
  }
}

ImageCheck CheckImage(Format format, const uint8_t* data, size_t n) {
  ImageCheck out;
  out.info.format = format;
  if (n == 0) {
    out.findings.push_back(Make(FindingCode::kEmpty, "file is empty (0 bytes)", 0));
    return out;
  }
  switch (format) {
    case Format::kJpeg:
      DecodeJpeg(data, n, &out);
      JpegStructureFindings(data, n, &out);
      break;
    case Format::kPng:
      DecodePng(data, n, &out);
      PngDamageFindings(data, n, &out);
      break;
    case Format::kWebp: DecodeWebp(data, n, &out); break;
    case Format::kGif: DecodeGif(data, n, &out); break;
    case Format::kTiff: DecodeTiff(data, n, &out); break;
    case Format::kBmp: CheckBmp(data, n, &out); break;
    case Format::kIco: if (n < 6) out.findings.push_back(Make(FindingCode::kTruncated, "ICO header cut off", n)); else CheckIco(data, n, &out); break;
    case Format::kPnm: CheckPnm(data, n, &out); break;
    case Format::kHeif: case Format::kAvif:
      out.findings.push_back(Make(FindingCode::kNoDecoder, std::string(FormatName(format)) +
                                  ": no decoder in this build; only the container signature was checked",
                                  -1, Severity::kInfo));
      break;
    default:
      out.findings.push_back(Make(FindingCode::kNotAnImage, "not an image format", 0));
  }
  if (out.messages_not_listed)
    out.findings.push_back(Make(FindingCode::kDecoderWarning,
                                "... and " + std::to_string(out.messages_not_listed) +
                                    " more decoder message(s) not listed (the first " +
                                    std::to_string(kMaxDecoderMessages) + " are)",
                                -1, Severity::kWarning));
  out.info.format = format;
  return out;
}

}  // namespace edgedecode::doctor
