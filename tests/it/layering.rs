//! Issue 27: the layering of `src/` (ARCHITECTURE.md), held by reading the code's own imports.
//!
//! Every `use crate::…`, `use super::…` and inline `crate::…` / `super::…` path outside test
//! modules is an arrow from its file's module to the deepest module it names. The test fails on
//! an import circle, on an arrow from a lower layer to a higher one (beyond the short, justified
//! list in `ALLOWED_UP`), on an S3 handler importing another handler, and on a module that no
//! layer claims (so a new module has to be placed on purpose).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, from the top down: a module may import its own layer and the ones below it.
/// The longest matching prefix places a module.
const LAYERS: &[(&str, u32)] = &[
    // The process: the binary, the library's root, the local development database's wiring.
    ("<main>", 90),
    ("", 90),
    ("admin_cli", 90),
    ("search_cli", 90),
    ("bench", 90),
    ("local", 90),
    ("server", 80),
    // The HTTP side: the router, addressing, the admin API.
    ("http", 70),
    // The website endpoint (beside the router: it enters `s3` through `s3::dispatch`, as the
    // router does).
    ("website", 65),
    // The web console: the same door as the website endpoint.
    ("console", 65),
    // MinIO's admin API: a thin room over the identity store, judged as the IAM API judges.
    ("minio_admin", 65),
    // The S3 entry and the background jobs.
    ("s3", 60),
    ("s3::dispatch", 60),
    ("janitor", 60),
    // STS (issue 61): AssumeRole, session tokens, web identity; it speaks IAM's Query protocol
    // and resolves callers as the IAM API does, so it sits just above it.
    ("sts", 57),
    // AWS's IAM Query API (issue 60): the entry and its action families, beside the S3
    // handlers (they use the same authorization facts and the identity store).
    ("iam", 56),
    // S3 handlers, one per operation family (see HANDLERS).
    ("s3::acl", 55),
    ("s3::bucket", 55),
    ("s3::copy", 55),
    ("s3::cors", 55),
    ("s3::delete", 55),
    ("s3::encryption", 55),
    ("s3::lifecycle", 55),
    ("s3::logging", 55),
    ("s3::minio", 55),
    ("s3::notification", 55),
    ("s3::list", 55),
    ("s3::multipart", 55),
    ("s3::object", 55),
    ("s3::object_lock", 55),
    ("s3::ownership", 55),
    ("s3::policy", 55),
    ("s3::post", 55),
    ("s3::public_access", 55),
    ("s3::search", 55),
    ("s3::tagging", 55),
    ("s3::unconfigured", 55),
    ("s3::website", 55),
    // Shared steps with I/O, below the handlers.
    ("s3::attrs", 50),
    ("s3::authz", 50),
    ("s3::events", 50),
    ("s3::lookup", 50),
    ("s3::sse", 50),
    ("s3::write", 50),
    // Pure decisions, then the shapes of answers, then the parse layer.
    ("s3::rules", 45),
    ("s3::respond", 42),
    ("s3::request", 40),
    // The S3 vocabulary: operations, policy actions, the compatibility table.
    ("s3::op", 35),
    ("s3::actions", 35),
    ("s3::compat", 35),
    // Shared state and configuration.
    ("state", 30),
    ("config", 28),
    // Server access logs: records, their staging and delivery (state holds the recorder).
    ("access_log", 27),
    // Event notifications: the outbox, targets and the dispatcher (state holds the notifier).
    ("notify", 27),
    // OpenID Connect token verification (issue 61): pure but for its bounded fetches; it
    // imports nothing of grids3, the STS and console callers import it.
    ("oidc", 27),
    // Request-level codecs: signatures, lifecycle rules, XML shapes; then the error type.
    ("auth", 25),
    // IAM's protocol layer: the form, its validation, the answers' XML, the error shape.
    ("iam::error", 26),
    ("iam::query", 26),
    ("iam::validate", 26),
    ("iam::xml", 26),
    ("iam::actions", 26),
    ("iam::slots", 26),
    ("iam::role_xml", 26),
    ("iam::oidc_xml", 26),
    ("lifecycle", 25),
    ("xml", 25),
    ("error", 20),
    // The storage engine, then crypto below it.
    ("storage", 15),
    ("crypto", 10),
    // Leaves: shared value types and small utilities that import nothing above them.
    ("model", 5),
    ("percent", 5),
    ("dberror", 5),
    ("checksum", 5),
    ("metrics", 5),
    ("failpoint", 5),
    ("hashing", 5),
    ("background", 5),
    ("subresource", 5),
    ("tls", 5),
    ("devdb", 5),
    // Metadata search's query language: the typed tree and its parser (issue 63).
    ("search", 5),
];

/// The S3 handler modules: each imports no other.
const HANDLERS: &[&str] = &[
    "s3::acl",
    "s3::bucket",
    "s3::copy",
    "s3::cors",
    "s3::delete",
    "s3::encryption",
    "s3::lifecycle",
    "s3::logging",
    "s3::minio",
    "s3::notification",
    "s3::list",
    "s3::multipart",
    "s3::object",
    "s3::object_lock",
    "s3::ownership",
    "s3::policy",
    "s3::post",
    "s3::public_access",
    "s3::search",
    "s3::tagging",
    "s3::unconfigured",
    "s3::website",
];

/// Arrows that run up, each with its reason (at most 5). None today.
const ALLOWED_UP: &[(&str, &str, &str)] = &[];

/// Modules the check does not read: test-only code.
const SKIPPED: &[&str] = &["fuzz_tests"];

type Module = Vec<String>;

fn name(m: &Module) -> String {
    m.join("::")
}

/// Every module of `src/`, by path, and its file.
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    let mut out = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap().with_extension("");
        let mut m: Module = rel
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        match m.last().map(String::as_str) {
            Some("mod") => {
                m.pop();
            }
            Some("lib") if m.len() == 1 => m.clear(),
            Some("main") if m.len() == 1 => m = vec!["<main>".to_owned()],
            _ => {}
        }
        out.insert(m, f);
    }
    out
}

/// The source without comments, string contents and `#[cfg(test)]` modules.
fn code_of(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            i += 2;
            while i < b.len() && !b[i..].starts_with(b"*/") {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' {
            // Raw strings are rare here and hold no `crate::` paths worth reading.
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') {
            // A char literal ('x', '\n', '\''): skip it whole.
            let close = text[i + 2..].find('\'').map_or(b.len(), |k| i + 2 + k + 1);
            i = close;
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    // Drop test modules: from `#[cfg(test)]` followed by `mod` to its closing brace.
    let mut code = out;
    while let Some(at) = code.find("#[cfg(test)]") {
        let rest = &code[at..];
        let Some(m) = rest.find("mod ") else { break };
        let Some(open) = rest[m..].find(['{', ';']) else {
            break;
        };
        let start = at + m + open;
        let end = if code.as_bytes()[start] == b';' {
            start + 1
        } else {
            let mut depth = 0;
            let mut end = code.len();
            for (k, ch) in code[start..].char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = start + k + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            end
        };
        code.replace_range(at..end, "");
    }
    code
}

/// Expands a use tree (`a::{b, c::{d, e}}`) into paths.
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let Some(open) = tree.find('{') else {
        let t = tree.split(" as ").next().unwrap_or("").replace(' ', "");
        return vec![t];
    };
    let prefix = tree[..open].replace(' ', "");
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut cur) = (0, String::new());
    for ch in inner.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    parts.push(cur);
    parts
        .iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(|p| expand(p))
        .map(|e| format!("{prefix}{e}"))
        .collect()
}

/// The paths a file's code names: its `use` trees and its inline `crate::`/`super::` paths.
fn paths_in(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().last();
        let after = &rest[at + 4..];
        if before.is_none_or(|c| !c.is_alphanumeric() && c != '_') {
            let t = after.trim_start();
            if t.starts_with("crate") || t.starts_with("super") || t.starts_with("self") {
                if let Some(end) = after.find(';') {
                    out.extend(expand(&after[..end]));
                }
            }
        }
        rest = after;
    }
    for head in ["crate::", "super::"] {
        let mut rest = code;
        while let Some(at) = rest.find(head) {
            let before = rest[..at].chars().last();
            let tail = &rest[at..];
            let end = tail
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(tail.len());
            if before.is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':')) {
                out.push(tail[..end].trim_end_matches(':').to_owned());
            }
            rest = &rest[at + head.len()..];
        }
    }
    out
}

/// The module a path names: the longest prefix that is a module.
fn resolve(from: &Module, path: &str, mods: &BTreeMap<Module, PathBuf>) -> Option<Module> {
    let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: Module = match segs.first() {
        Some(&"crate") => {
            segs.remove(0);
            Vec::new()
        }
        Some(&"super") | Some(&"self") => from.clone(),
        _ => return None,
    };
    while let Some(&s) = segs.first() {
        match s {
            "super" => {
                base.pop();
            }
            "self" => {}
            _ => break,
        }
        segs.remove(0);
    }
    base.extend(segs.iter().map(|s| (*s).to_owned()));
    (0..=base.len())
        .rev()
        .map(|n| base[..n].to_vec())
        .find(|m| mods.contains_key(m))
}

/// The arrows of the crate: module -> modules it imports (itself and its ancestors left out:
/// a child naming its parent's declarations is no arrow).
fn arrows(
    src: &Path,
) -> (
    BTreeMap<Module, PathBuf>,
    BTreeMap<Module, BTreeSet<Module>>,
) {
    let mods = modules(src);
    let mut out: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (m, f) in &mods {
        if SKIPPED.contains(&name(m).as_str()) {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(f).unwrap());
        for p in paths_in(&code) {
            if let Some(t) = resolve(m, &p, &mods) {
                if &t != m && !t.is_empty() && !SKIPPED.contains(&name(&t).as_str()) {
                    out.entry(m.clone()).or_default().insert(t);
                }
            }
        }
    }
    (mods, out)
}

fn layer_of(m: &Module) -> Option<(&'static str, u32)> {
    let n = name(m);
    LAYERS
        .iter()
        .filter(|(p, _)| n == *p || (!p.is_empty() && n.starts_with(&format!("{p}::"))))
        .max_by_key(|(p, _)| p.len())
        .copied()
}

/// The strongly connected components of more than one module (Tarjan).
fn circles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<String>> {
    struct T<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on: BTreeSet<&'a Module>,
        out: Vec<Vec<String>>,
    }
    fn strong<'a>(t: &mut T<'a>, v: &'a Module) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        if let Some(ws) = t.edges.get(v) {
            for w in ws {
                let w = t.edges.get_key_value(w).map_or(w, |(k, _)| k);
                if !t.index.contains_key(w) {
                    strong(t, w);
                    let lw = t.low[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if t.on.contains(w) {
                    let iw = t.index[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(name(w));
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            strong(&mut t, v);
        }
    }
    t.out
}

/// What is wrong with the layering of the tree under `src`.
fn violations(src: &Path) -> Vec<String> {
    let (mods, edges) = arrows(src);
    let mut out = Vec::new();
    for m in mods.keys() {
        if !SKIPPED.contains(&name(m).as_str()) && layer_of(m).is_none() {
            out.push(format!(
                "{}: no layer claims it (add it to LAYERS)",
                name(m)
            ));
        }
    }
    for c in circles(&edges) {
        out.push(format!("import circle: {}", c.join(", ")));
    }
    for (a, targets) in &edges {
        let Some((pa, la)) = layer_of(a) else {
            continue;
        };
        for b in targets {
            let Some((pb, lb)) = layer_of(b) else {
                continue;
            };
            let (na, nb) = (name(a), name(b));
            if lb > la && !ALLOWED_UP.iter().any(|(x, y, _)| *x == na && *y == nb) {
                out.push(format!(
                    "{na} (layer {la}) imports {nb} (layer {lb}), a layer above it"
                ));
            }
            if pa != pb && HANDLERS.contains(&pa) && HANDLERS.contains(&pb) {
                out.push(format!(
                    "handler {na} imports handler {nb}: move the shared step down"
                ));
            }
        }
    }
    out
}

/// `unsafe` is denied crate-wide (Cargo.toml), and one file may allow it: the MD5 lanes,
/// whose CPU intrinsics are unsafe to call.
#[test]
fn only_the_md5_lanes_allow_unsafe_code() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let allowed = src.join("hashing/md5/lanes.rs");
    let files: Vec<PathBuf> = modules(&src).into_values().collect();
    assert!(files.contains(&allowed), "{} not read", allowed.display());
    let allowing: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            text.contains("allow(unsafe_code)") || text.contains("expect(unsafe_code)")
        })
        .map(|f| f.strip_prefix(&src).unwrap().display().to_string())
        .collect();
    assert_eq!(allowing, ["hashing/md5/lanes.rs"]);
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains("unsafe_code = \"deny\""),
        "Cargo.toml no longer denies unsafe code"
    );
}

#[test]
fn the_source_keeps_its_layers() {
    assert!(ALLOWED_UP.len() <= 5, "at most 5 arrows may run up");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (mods, edges) = arrows(&src);
    // The reading itself works: the tree has its modules, and the arrows it is known to have.
    assert!(mods.len() > 100, "{} modules read", mods.len());
    let has = |a: &str, b: &str| {
        edges
            .iter()
            .any(|(x, ts)| name(x) == a && ts.iter().any(|t| name(t) == b))
    };
    assert!(
        has("s3::object", "storage::gridfs"),
        "s3::object -> storage::gridfs not read"
    );
    assert!(
        has("s3::dispatch", "s3::object"),
        "s3::dispatch -> s3::object not read"
    );
    let v = violations(&src);
    assert!(v.is_empty(), "the layering is broken:\n{}", v.join("\n"));
}

#[test]
fn a_forbidden_import_is_caught() {
    // A copy of the tree with one arrow that runs up (storage importing s3) and one handler
    // importing another: the check must name both.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let copy = tempfile::tempdir().unwrap();
    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let p = e.unwrap().path();
            let t = to.join(p.file_name().unwrap());
            if p.is_dir() {
                copy_dir(&p, &t);
            } else {
                std::fs::copy(&p, &t).unwrap();
            }
        }
    }
    copy_dir(&root, copy.path());
    assert!(violations(copy.path()).is_empty());
    let gridfs = copy.path().join("storage/gridfs/mod.rs");
    let text = std::fs::read_to_string(&gridfs).unwrap();
    std::fs::write(
        &gridfs,
        format!("use crate::s3::request::S3Request;\n{text}"),
    )
    .unwrap();
    let object = copy.path().join("s3/object.rs");
    let text = std::fs::read_to_string(&object).unwrap();
    std::fs::write(
        &object,
        format!("use crate::s3::copy::copy_object;\n{text}"),
    )
    .unwrap();
    let v = violations(copy.path()).join("\n");
    assert!(
        v.contains("storage::gridfs (layer 15) imports s3::request (layer 40)"),
        "{v}"
    );
    assert!(
        v.contains("handler s3::object imports handler s3::copy"),
        "{v}"
    );
    assert!(
        v.contains("import circle"),
        "storage <-> s3 is a circle too: {v}"
    );
}
