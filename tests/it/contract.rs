//! The OpenAPI contract: schemathesis generates requests from `openapi/grids3.yaml`, signs
//! them with botocore's SigV4 signer and requires no 5xx, no undeclared status or content type,
//! and no 403 for the root key (tests/py/schemathesis_run.py).

use crate::support;

#[test]
fn schemathesis_against_the_openapi_document() {
    support::run(async {
        let gw = support::gateway("contract").await;
        support::run_py_checks(&gw, "schemathesis_run.py", "schemathesis", &["25"]).await;
    });
}
