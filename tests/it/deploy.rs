//! The deployment files, checked without Docker (none runs here): the compose files validate
//! against the Compose Specification schema and set only variables grids3 reads.

use std::path::PathBuf;
use std::process::Command;

use crate::support;

/// The Compose Specification schema: `GRIDS3_COMPOSE_SCHEMA`; else the workspace's
/// `../shared/compose-spec/compose-spec.json`; else (a bare CI clone) the copy of the schema
/// that the `docker-compose` 1.29.2 wheel on PyPI ships (`compose/config/compose_spec.json`, an
/// older revision of the same schema), fetched into `target/`.
fn compose_schema() -> PathBuf {
    if let Some(p) = std::env::var_os("GRIDS3_COMPOSE_SCHEMA") {
        return PathBuf::from(p);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let shared = root.join("../shared/compose-spec/compose-spec.json");
    if shared.exists() {
        return shared;
    }
    let out = root.join("target/compose_spec.json");
    if !out.exists() {
        std::fs::create_dir_all(root.join("target")).unwrap();
        let script = r#"
import glob, subprocess, sys, tempfile, zipfile
tmp = tempfile.mkdtemp()
subprocess.run([sys.executable, "-m", "pip", "download", "docker-compose==1.29.2", "--no-deps", "-q", "-d", tmp], check=True)
with zipfile.ZipFile(glob.glob(tmp + "/*.whl")[0]) as z, open(sys.argv[1], "wb") as f:
    f.write(z.read("compose/config/compose_spec.json"))
"#;
        let ok = Command::new(support::python())
            .arg("-c")
            .arg(script)
            .arg(&out)
            .status()
            .unwrap()
            .success();
        assert!(ok, "fetching the Compose schema failed");
    }
    out
}

#[test]
fn compose_files_validate_and_use_only_known_variables() {
    let help = Command::new(env!("CARGO_BIN_EXE_grids3"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(help.status.success());
    let tmp = tempfile::tempdir().unwrap();
    let help_file = tmp.path().join("help.txt");
    std::fs::write(&help_file, &help.stdout).unwrap();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(support::python())
        .arg(root.join("tests/py/check_compose.py"))
        .arg(&help_file)
        .arg(compose_schema())
        .arg(root.join("docker-compose.yml"))
        .arg(root.join("docker-compose.two-instances.yml"))
        .arg(root.join("docker-compose.sharded.yml"))
        .arg(root.join("docker-compose.tls.yml"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("compose: all checks passed"));
    assert!(stdout.contains("health checked over https"), "{stdout}");
}

#[test]
fn dockerfile_is_complete() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Dockerfile")).unwrap();
    for needle in [
        "AS build",
        "--locked",
        "USER grids3",
        "EXPOSE 9000 9001 9002",
        // The console's templates and assets are compiled into the binary.
        "COPY templates ./templates",
        "COPY assets ./assets",
        "HEALTHCHECK",
        "/_grids3/ready",
    ] {
        assert!(text.contains(needle), "Dockerfile lacks {needle}");
    }
}

/// The targets cargo finds in a package: `cargo metadata --no-deps` leaves out a declared
/// target whose file is missing (a build then fails: "can't find `x` bench").
fn target_names(dir: &std::path::Path) -> Vec<String> {
    let out = support::stdout_of(
        Command::new(env!("CARGO"))
            .args(["metadata", "--no-deps", "--offline"])
            .args(["--format-version", "1"])
            .current_dir(dir),
    );
    let meta: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let mut names: Vec<String> = meta["packages"][0]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let kind = t["kind"][0].as_str().unwrap_or("?");
            format!("{kind} {}", t["name"].as_str().unwrap_or("?"))
        })
        .collect();
    names.sort();
    names
}

/// The Docker build compiles the dependencies against stub sources first: its stub script,
/// run (under `sh`, as the Dockerfile runs it) beside a copy of Cargo.toml and nothing else,
/// gives cargo every target the real checkout has. A hard-coded list of benchmarks in the
/// Dockerfile once missed six of them, which broke the image's build.
#[test]
fn docker_stubs_cover_every_declared_target() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dockerfile = std::fs::read_to_string(root.join("Dockerfile")).unwrap();
    assert!(dockerfile.contains("COPY scripts/docker-stubs ./scripts/docker-stubs"));
    assert!(dockerfile.contains("RUN sh scripts/docker-stubs"));
    // The patched driver is a path dependency: the dependency build needs it.
    assert!(dockerfile.contains("COPY vendor ./vendor"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(root.join("Cargo.toml"), dir.path().join("Cargo.toml")).unwrap();
    let status = Command::new("sh")
        .arg(root.join("scripts/docker-stubs"))
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let want = target_names(&root);
    assert!(
        want.iter().filter(|t| t.starts_with("bench ")).count() >= 11,
        "{want:?}"
    );
    assert_eq!(target_names(dir.path()), want);
}
