// parasurf view: a self-contained web page (three.js from Debian's libjs-three, inlined; the mesh inlined as glTF)
// that shows a mesh with orbit controls, per-group colours and a normals-shading switch; no network needed.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

#include "parasurf/commands.hpp"
#include "parasurf/error.hpp"
#include "parasurf/ffd.hpp"

namespace parasurf::cli {

namespace {

std::string read_all(const std::string& path, const std::string& what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorKind::Io, "cannot read " + what + " '" + path + "'");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string base64(const std::string& in) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8 | (unsigned char)in[i + 2];
    out += t[v >> 18], out += t[v >> 12 & 63], out += t[v >> 6 & 63], out += t[v & 63];
  }
  if (i + 1 == in.size()) {
    const unsigned v = (unsigned char)in[i] << 16;
    out += t[v >> 18], out += t[v >> 12 & 63], out += "==";
  } else if (i + 2 == in.size()) {
    const unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8;
    out += t[v >> 18], out += t[v >> 12 & 63], out += t[v >> 6 & 63], out += '=';
  }
  return out;
}

// The mesh as glTF binary bytes: a .glb as it is, any other mesh file converted (PLY face colours become groups).
std::string glb_bytes(const std::string& input) {
  if (input.size() > 4 && input.substr(input.size() - 4) == ".glb") return read_all(input, "mesh");
  const PolygonMesh pm = read_polygon_mesh(input);
  TriangleMesh m;
  m.positions.assign(pm.positions.begin(), pm.positions.end());
  std::map<std::array<std::uint8_t, 3>, int> colour_group;
  for (std::int64_t f = 0; f < pm.face_count(); ++f) {
    int group = -1;
    if (!pm.face_colors.empty()) {
      const std::array<std::uint8_t, 3> c{pm.face_colors[3 * f], pm.face_colors[3 * f + 1], pm.face_colors[3 * f + 2]};
      const auto [it, fresh] = colour_group.try_emplace(c, int(colour_group.size()));
      if (fresh) {
        for (int k = 0; k < 3; ++k) m.group_colors.push_back(c[k] / 255.0f);
        m.group_names.push_back("colour " + std::to_string(it->second));
      }
      group = it->second;
    }
    for (std::int64_t c = pm.face_offsets[f] + 1; c + 1 < pm.face_offsets[f + 1]; ++c) {
      m.triangles.insert(m.triangles.end(), {pm.face_indices[pm.face_offsets[f]], pm.face_indices[c], pm.face_indices[c + 1]});
      if (group >= 0) m.face_groups.push_back(group);
    }
  }
  const auto tmp = std::filesystem::temp_directory_path() / ("parasurf-view-" + std::to_string(::getpid()) + ".glb");
  write_mesh(tmp.string(), m);
  std::string bytes = read_all(tmp.string(), "temporary glTF");
  std::filesystem::remove(tmp);
  return bytes;
}

const char* kPage = R"HTML(<!doctype html>
<html><head><meta charset="utf-8"><title>parasurf view: @NAME@</title>
<style>
html,body{margin:0;height:100%;overflow:hidden;background:#fff;font:14px sans-serif}
#info{position:absolute;left:10px;top:8px;background:rgba(255,255,255,.8);padding:4px 8px;border-radius:4px}
</style></head>
<body data-triangles="" data-status="loading">
<div id="info"><b>@NAME@</b> &middot; <span id="triangles">loading&hellip;</span> triangles &middot;
<label><input type="checkbox" id="normals"> normals shading</label> &middot; drag to orbit, wheel to zoom</div>
<script>@THREE@</script>
<script>@ORBIT@</script>
<script>@GLTF@</script>
<script>
(function () {
  var data = "@GLB@";
  function decode(b64) {
    var s = atob(b64), a = new Uint8Array(s.length);
    for (var i = 0; i < s.length; ++i) a[i] = s.charCodeAt(i);
    return a.buffer;
  }
  var renderer = new THREE.WebGLRenderer({antialias: true, preserveDrawingBuffer: true});
  renderer.setPixelRatio(window.devicePixelRatio);
  renderer.setSize(window.innerWidth, window.innerHeight);
  renderer.setClearColor(0xffffff);
  document.body.appendChild(renderer.domElement);
  var scene = new THREE.Scene();
  var camera = new THREE.PerspectiveCamera(35, window.innerWidth / window.innerHeight, 0.001, 1000);
  scene.add(new THREE.HemisphereLight(0xffffff, 0x606070, 0.6));
  var light = new THREE.DirectionalLight(0xffffff, 0.7);
  camera.add(light);
  light.position.set(0.4, 0.6, 1);
  scene.add(camera);
  var controls = new THREE.OrbitControls(camera, renderer.domElement);
  var meshes = [], normalMaterial = new THREE.MeshNormalMaterial({side: THREE.DoubleSide});
  new THREE.GLTFLoader().parse(decode(data), "", function (gltf) {
    var root = gltf.scene, triangles = 0;
    root.traverse(function (o) {
      if (!o.isMesh) return;
      var g = o.geometry;
      if (!g.attributes.normal) g.computeVertexNormals();
      triangles += (g.index ? g.index.count : g.attributes.position.count) / 3;
      o.material.side = THREE.DoubleSide;
      o.userData.own = o.material;
      meshes.push(o);
    });
    scene.add(root);
    var box = new THREE.Box3().setFromObject(root), size = box.getSize(new THREE.Vector3()), centre = box.getCenter(new THREE.Vector3());
    var radius = Math.max(size.length() / 2, 1e-6);
    camera.near = radius / 100; camera.far = radius * 100; camera.updateProjectionMatrix();
    camera.position.copy(centre).add(new THREE.Vector3(-1.0, -1.7, 0.9).normalize().multiplyScalar(radius * 3.2));
    camera.up.set(0, 0, 1);
    controls.target.copy(centre);
    controls.update();
    document.getElementById("triangles").textContent = triangles;
    document.body.setAttribute("data-triangles", String(triangles));
    document.body.setAttribute("data-status", "ready");
    document.title += " (" + triangles + " triangles)";
  }, function (err) {
    document.getElementById("triangles").textContent = "error: " + err;
    document.body.setAttribute("data-status", "error");
  });
  document.getElementById("normals").addEventListener("change", function (e) {
    meshes.forEach(function (m) { m.material = e.target.checked ? normalMaterial : m.userData.own; });
  });
  window.addEventListener("resize", function () {
    camera.aspect = window.innerWidth / window.innerHeight; camera.updateProjectionMatrix();
    renderer.setSize(window.innerWidth, window.innerHeight);
  });
  (function frame() { requestAnimationFrame(frame); controls.update(); renderer.render(scene, camera); })();
})();
</script></body></html>
)HTML";

void replace_all(std::string& s, const std::string& key, const std::string& value) {
  for (std::size_t p = s.find(key); p != std::string::npos; p = s.find(key, p + value.size())) s.replace(p, key.size(), value);
}

}  // namespace

void add_view(CLI::App& app) {
  struct Args {
    std::string input, output, three = "/usr/share/javascript/three", json;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("view", "Write a self-contained web page that shows a mesh (orbit controls, per-group "
                                         "colours, normals shading); open it in any browser, no network needed");
  cmd->add_option("input", a->input, "Mesh: .glb, .ply (face colours kept), .obj, .off or .stl")->required();
  cmd->add_option("--output,-o", a->output, "HTML file (default: the mesh's name with .html)");
  cmd->add_option("--three", a->three, "Directory of three.js (Debian's libjs-three)");
  cmd->add_option("--json", a->json, "Write the report as JSON to this file (- for standard output)");
  cmd->callback([a] {
    const auto started = std::chrono::steady_clock::now();
    if (a->output.empty()) a->output = a->input.substr(0, a->input.find_last_of('.')) + ".html";
    const std::string three = a->three + "/three.min.js", orbit = a->three + "/examples/js/controls/OrbitControls.js",
                      gltf = a->three + "/examples/js/loaders/GLTFLoader.js";
    for (const auto& f : {three, orbit, gltf})
      if (!std::filesystem::exists(f))
        throw Error(ErrorKind::Io, "three.js not found at '" + f + "' (install Debian's libjs-three, or pass --three DIR)");
    const std::string glb = glb_bytes(a->input);
    std::string page = kPage;
    const std::string name = a->input.substr(a->input.find_last_of('/') + 1);
    // Scripts first, data last: replacing @GLB@ last keeps the mesh bytes out of the other searches.
    replace_all(page, "@NAME@", name);
    const std::size_t tp = page.find("@THREE@");
    page.replace(tp, 7, read_all(three, "three.js"));
    const std::size_t op = page.find("@ORBIT@", tp);
    page.replace(op, 7, read_all(orbit, "OrbitControls"));
    const std::size_t gp = page.find("@GLTF@", op);
    page.replace(gp, 6, read_all(gltf, "GLTFLoader"));
    const std::size_t dp = page.rfind("@GLB@");
    page.replace(dp, 5, base64(glb));
    write_report(a->output, page);
    std::printf("wrote %s (%zu KiB, the mesh and three.js inlined): open it in a browser\n", a->output.c_str(), page.size() / 1024);
    if (!a->json.empty())
      write_json_report(a->json, "view", a->input, a->output,
                        {{"bytes", page.size()},
                         {"seconds", {{"total", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()}}}});
  });
}

}  // namespace parasurf::cli
