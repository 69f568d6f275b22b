//! The OpenAPI contract: schemathesis generates requests from `openapi/grids3.yaml`, signs
//! them with botocore's SigV4 signer and requires no 5xx, no undeclared status or content type,
//! and no 403 for the root key (tests/py/schemathesis_run.py).

use crate::support;

#[test]
fn schemathesis_against_the_openapi_document() {
    support::run(async {
        let gw = support::gateway("contract").await;
        let endpoint = gw.endpoint();
        let out = tokio::task::spawn_blocking(move || {
            std::process::Command::new(support::python())
                .arg(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/py/schemathesis_run.py"
                ))
                .args([&endpoint, support::AK, support::SK, "25"])
                .output()
                .expect("python")
        })
        .await
        .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        println!("{stdout}");
        assert!(
            out.status.success(),
            "schemathesis failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("schemathesis: all checks passed"));
    });
}
