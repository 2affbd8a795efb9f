// A z-buffered software rasteriser for pictures of meshes, and a minimal PNG encoder over zlib.
#include "parasurf/render.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>

#include "io/atomic_file.hpp"
#include "parasurf/error.hpp"

namespace parasurf {

namespace {

using V3 = std::array<double, 3>;
V3 cross(const V3& a, const V3& b) { return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]}; }
double dot(const V3& a, const V3& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
V3 unit(V3 a) {
  const double l = std::sqrt(dot(a, a));
  return l > 0 ? V3{a[0] / l, a[1] / l, a[2] / l} : V3{0, 0, 1};
}

const float kPalette[8][3] = {{0.80f, 0.72f, 0.55f}, {0.35f, 0.55f, 0.80f}, {0.80f, 0.40f, 0.35f}, {0.45f, 0.70f, 0.45f},
                              {0.70f, 0.55f, 0.80f}, {0.85f, 0.75f, 0.35f}, {0.40f, 0.75f, 0.75f}, {0.65f, 0.65f, 0.65f}};

}  // namespace

std::vector<std::uint8_t> render_mesh(const TriangleMesh& mesh, const RenderOptions& o, std::span<const std::uint8_t> face_rgb) {
  if (o.width < 16 || o.width > 8192 || o.height < 16 || o.height > 8192)
    throw Error(ErrorKind::InvalidArgument, "picture size " + std::to_string(o.width) + "x" + std::to_string(o.height) +
                                                " is outside 16..8192 per side");
  const int ss = std::clamp(o.supersample, 1, 4);
  const int w = o.width * ss, h = o.height * ss;
  // Camera frame: d looks from the camera into the scene.
  const V3 towards_camera = unit(o.view);
  const V3 d{-towards_camera[0], -towards_camera[1], -towards_camera[2]};
  V3 right = cross(d, o.up);
  if (dot(right, right) < 1e-12) right = cross(d, V3{0, 1, 0});
  right = unit(right);
  const V3 up = cross(right, d);
  const std::int64_t nv = mesh.vertex_count(), nf = mesh.triangle_count();
  std::vector<double> sx(static_cast<std::size_t>(nv)), sy(sx.size()), sz(sx.size());
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  std::vector<char> used(sx.size(), 0);
  for (auto v : mesh.triangles) used[v] = 1;
  for (std::int64_t v = 0; v < nv; ++v) {
    const V3 p{mesh.positions[3 * v], mesh.positions[3 * v + 1], mesh.positions[3 * v + 2]};
    sx[v] = dot(p, right);
    sy[v] = dot(p, up);
    sz[v] = dot(p, d);
    if (used[v] && std::isfinite(sx[v]) && std::isfinite(sy[v])) {
      x0 = std::min(x0, sx[v]), x1 = std::max(x1, sx[v]);
      y0 = std::min(y0, sy[v]), y1 = std::max(y1, sy[v]);
    }
  }
  std::vector<float> rgb(std::size_t(w) * h * 3);
  for (std::size_t i = 0; i < rgb.size(); ++i) rgb[i] = o.background[i % 3];
  if (x1 >= x0) {
    const double span = std::max({x1 - x0, (y1 - y0) * w / double(h), 1e-30});
    const double scale = w * (1 - 2 * o.margin) / span;
    const double cx = 0.5 * (x0 + x1), cy = 0.5 * (y0 + y1);
    for (std::int64_t v = 0; v < nv; ++v) {
      sx[v] = 0.5 * w + (sx[v] - cx) * scale;
      sy[v] = 0.5 * h - (sy[v] - cy) * scale;  // rows go down
    }
    std::vector<float> depth(std::size_t(w) * h, 1e30f);
    const V3 light = unit(V3{towards_camera[0] + 0.3 * up[0] - 0.2 * right[0], towards_camera[1] + 0.3 * up[1] - 0.2 * right[1],
                             towards_camera[2] + 0.3 * up[2] - 0.2 * right[2]});
    const bool have_normals = mesh.normals.size() == mesh.positions.size();
    for (std::int64_t f = 0; f < nf; ++f) {
      const std::uint32_t* t = mesh.triangles.data() + 3 * f;
      float base[3];
      if (face_rgb.size() >= std::size_t(3 * (f + 1))) {
        for (int c = 0; c < 3; ++c) base[c] = face_rgb[3 * f + c] / 255.0f;
      } else if (!mesh.face_groups.empty()) {
        const int g = mesh.face_groups[f];
        const float* col = g >= 0 && std::size_t(3 * g + 2) < mesh.group_colors.size() ? &mesh.group_colors[3 * g] : kPalette[(g < 0 ? 0 : g) % 8];
        for (int c = 0; c < 3; ++c) base[c] = col[c];
      } else {
        for (int c = 0; c < 3; ++c) base[c] = o.color[c];
      }
      const double ax = sx[t[0]], ay = sy[t[0]], bx = sx[t[1]], by = sy[t[1]], qx = sx[t[2]], qy = sy[t[2]];
      const double area = (bx - ax) * (qy - ay) - (by - ay) * (qx - ax);
      if (!(std::abs(area) > 0)) continue;
      V3 fn;
      {
        const V3 p0{mesh.positions[3 * t[0]], mesh.positions[3 * t[0] + 1], mesh.positions[3 * t[0] + 2]};
        const V3 p1{mesh.positions[3 * t[1]], mesh.positions[3 * t[1] + 1], mesh.positions[3 * t[1] + 2]};
        const V3 p2{mesh.positions[3 * t[2]], mesh.positions[3 * t[2] + 1], mesh.positions[3 * t[2] + 2]};
        fn = unit(cross({p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]}, {p2[0] - p0[0], p2[1] - p0[1], p2[2] - p0[2]}));
      }
      const bool back = dot(fn, towards_camera) < 0;
      const int px0 = std::max(0, int(std::floor(std::min({ax, bx, qx})))), px1 = std::min(w - 1, int(std::ceil(std::max({ax, bx, qx}))));
      const int py0 = std::max(0, int(std::floor(std::min({ay, by, qy})))), py1 = std::min(h - 1, int(std::ceil(std::max({ay, by, qy}))));
      for (int py = py0; py <= py1; ++py)
        for (int px = px0; px <= px1; ++px) {
          const double x = px + 0.5, y = py + 0.5;
          double l0 = ((bx - x) * (qy - y) - (by - y) * (qx - x)) / area;
          double l1 = ((qx - x) * (ay - y) - (qy - y) * (ax - x)) / area;
          double l2 = 1 - l0 - l1;
          if (l0 < 0 || l1 < 0 || l2 < 0) continue;
          const float z = float(l0 * sz[t[0]] + l1 * sz[t[1]] + l2 * sz[t[2]]);
          float& zb = depth[std::size_t(py) * w + px];
          if (!(z < zb)) continue;
          zb = z;
          V3 n = fn;
          if (have_normals) {
            V3 s{0, 0, 0};
            const double l[3] = {l0, l1, l2};
            for (int c = 0; c < 3; ++c)
              for (int k = 0; k < 3; ++k) s[k] += l[c] * mesh.normals[3 * t[c] + k];
            if (dot(s, s) > 0) n = unit(s);
          }
          if (dot(n, towards_camera) < 0) n = {-n[0], -n[1], -n[2]};  // both sides lit
          const double diffuse = std::max(0.0, dot(n, light));
          const V3 hv = unit(V3{light[0] + towards_camera[0], light[1] + towards_camera[1], light[2] + towards_camera[2]});
          const double spec = std::pow(std::max(0.0, dot(n, hv)), 40.0) * 0.25;
          const double shade = (0.22 + 0.78 * diffuse) * (back ? 0.7 : 1.0);
          float* out = &rgb[(std::size_t(py) * w + px) * 3];
          for (int c = 0; c < 3; ++c) out[c] = float(std::min(1.0, base[c] * shade + spec));
        }
    }
  }
  // Box filter down to the picture, gamma-free (the colours are already display values).
  std::vector<std::uint8_t> out(std::size_t(o.width) * o.height * 3);
  for (int y = 0; y < o.height; ++y)
    for (int x = 0; x < o.width; ++x)
      for (int c = 0; c < 3; ++c) {
        float s = 0;
        for (int j = 0; j < ss; ++j)
          for (int i = 0; i < ss; ++i) s += rgb[((std::size_t(y) * ss + j) * w + std::size_t(x) * ss + i) * 3 + c];
        out[(std::size_t(y) * o.width + x) * 3 + c] = std::uint8_t(std::lround(std::clamp(s / (ss * ss), 0.0f, 1.0f) * 255));
      }
  return out;
}

std::vector<std::uint8_t> render_plot(const Plot2D& plot, int width, int height, int supersample) {
  if (width < 16 || width > 8192 || height < 16 || height > 8192)
    throw Error(ErrorKind::InvalidArgument, "picture size outside 16..8192 per side");
  const int ss = std::clamp(supersample, 1, 4), w = width * ss, h = height * ss;
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  auto grow = [&](const std::array<double, 2>& p) {
    if (!std::isfinite(p[0]) || !std::isfinite(p[1])) return;
    x0 = std::min(x0, p[0]), x1 = std::max(x1, p[0]), y0 = std::min(y0, p[1]), y1 = std::max(y1, p[1]);
  };
  for (const auto& l : plot.lines)
    for (const auto& p : l.points) grow(p);
  for (const auto& d : plot.dots) grow(d.at);
  std::vector<float> rgb(std::size_t(w) * h * 3, 1.0f);
  if (x1 >= x0) {
    const double span = std::max({x1 - x0, (y1 - y0) * w / double(h), 1e-30}), scale = w * 0.9 / span;
    const double cx = 0.5 * (x0 + x1), cy = 0.5 * (y0 + y1);
    auto px = [&](const std::array<double, 2>& p) { return std::array<double, 2>{0.5 * w + (p[0] - cx) * scale, 0.5 * h - (p[1] - cy) * scale}; };
    auto paint = [&](int x, int y, const std::array<float, 3>& c) {
      if (x < 0 || y < 0 || x >= w || y >= h) return;
      float* o = &rgb[(std::size_t(y) * w + x) * 3];
      for (int k = 0; k < 3; ++k) o[k] = c[k];
    };
    for (const auto& l : plot.lines) {
      const double r = 0.5 * l.width * ss;
      for (std::size_t i = 0; i + 1 < l.points.size(); ++i) {
        const auto a = px(l.points[i]), b = px(l.points[i + 1]);
        const int bx0 = int(std::floor(std::min(a[0], b[0]) - r)), bx1 = int(std::ceil(std::max(a[0], b[0]) + r));
        const int by0 = int(std::floor(std::min(a[1], b[1]) - r)), by1 = int(std::ceil(std::max(a[1], b[1]) + r));
        const double dx = b[0] - a[0], dy = b[1] - a[1], len2 = dx * dx + dy * dy;
        for (int y = std::max(0, by0); y <= std::min(h - 1, by1); ++y)
          for (int x = std::max(0, bx0); x <= std::min(w - 1, bx1); ++x) {
            const double qx = x + 0.5 - a[0], qy = y + 0.5 - a[1];
            const double t = len2 > 0 ? std::clamp((qx * dx + qy * dy) / len2, 0.0, 1.0) : 0.0;
            const double ex = qx - t * dx, ey = qy - t * dy;
            if (ex * ex + ey * ey <= r * r) paint(x, y, l.color);
          }
      }
    }
    for (const auto& d : plot.dots) {
      const auto c = px(d.at);
      const double r = d.radius * ss;
      for (int y = int(c[1] - r); y <= int(c[1] + r) + 1; ++y)
        for (int x = int(c[0] - r); x <= int(c[0] + r) + 1; ++x)
          if ((x + 0.5 - c[0]) * (x + 0.5 - c[0]) + (y + 0.5 - c[1]) * (y + 0.5 - c[1]) <= r * r) paint(x, y, d.color);
    }
  }
  std::vector<std::uint8_t> out(std::size_t(width) * height * 3);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c) {
        float s = 0;
        for (int j = 0; j < ss; ++j)
          for (int i = 0; i < ss; ++i) s += rgb[((std::size_t(y) * ss + j) * w + std::size_t(x) * ss + i) * 3 + c];
        out[(std::size_t(y) * width + x) * 3 + c] = std::uint8_t(std::lround(std::clamp(s / (ss * ss), 0.0f, 1.0f) * 255));
      }
  return out;
}

void write_png(const std::string& path, std::span<const std::uint8_t> rgb, int width, int height) {
  if (rgb.size() < std::size_t(width) * height * 3) throw Error(ErrorKind::InvalidArgument, "write_png: too few pixels");
  std::vector<std::uint8_t> raw;
  raw.reserve(std::size_t(height) * (width * 3 + 1));
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);  // filter: none
    raw.insert(raw.end(), rgb.begin() + std::ptrdiff_t(y) * width * 3, rgb.begin() + std::ptrdiff_t(y + 1) * width * 3);
  }
  uLongf zsize = compressBound(uLong(raw.size()));
  std::vector<std::uint8_t> z(zsize);
  if (compress2(z.data(), &zsize, raw.data(), uLong(raw.size()), 9) != Z_OK)
    throw Error(ErrorKind::Io, "cannot compress the picture for '" + path + "'");
  z.resize(zsize);
  io::AtomicFile file(path);
  auto be32 = [](std::uint32_t v) { return std::array<std::uint8_t, 4>{std::uint8_t(v >> 24), std::uint8_t(v >> 16), std::uint8_t(v >> 8), std::uint8_t(v)}; };
  auto chunk = [&](const char* type, const std::uint8_t* data, std::size_t n) {
    const auto len = be32(std::uint32_t(n));
    file.write(len.data(), 4);
    file.write(type, 4);
    if (n) file.write(data, n);
    uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(type), 4);
    if (n) crc = crc32(crc, data, uInt(n));
    const auto c = be32(std::uint32_t(crc));
    file.write(c.data(), 4);
  };
  static const std::uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  file.write(signature, 8);
  std::uint8_t ihdr[13];
  const auto wb = be32(std::uint32_t(width)), hb = be32(std::uint32_t(height));
  std::copy(wb.begin(), wb.end(), ihdr);
  std::copy(hb.begin(), hb.end(), ihdr + 4);
  ihdr[8] = 8;   // bit depth
  ihdr[9] = 2;   // RGB
  ihdr[10] = ihdr[11] = ihdr[12] = 0;
  chunk("IHDR", ihdr, 13);
  chunk("IDAT", z.data(), z.size());
  chunk("IEND", nullptr, 0);
  file.commit();
}

}  // namespace parasurf
