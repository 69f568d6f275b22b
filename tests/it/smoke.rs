//! The CI smoke test: awscli, boto3 and curl against a real gateway (tests/py/smoke.py).

use crate::support;

#[test]
fn smoke_awscli_boto3_curl() {
    support::run(async {
        let gw = support::gateway("smoke").await;
        let endpoint = gw.endpoint();
        let out = tokio::task::spawn_blocking(move || {
            std::process::Command::new(support::python())
                .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/smoke.py"))
                .args([&endpoint, support::AK, support::SK])
                .output()
                .expect("python")
        })
        .await
        .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        println!("{stdout}");
        assert!(
            out.status.success(),
            "smoke.py failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("smoke: all checks passed"));
    });
}
