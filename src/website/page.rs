//! The website endpoint's error pages: HTML, as AWS's website endpoint answers (never the S3
//! endpoint's XML). Every value in a page is escaped: a key is text, never markup.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;

use crate::xml::escape;

/// What went wrong, as a page lists it.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The HTTP status.
    pub status: StatusCode,
    /// AWS's error code (`NoSuchKey`, `AccessDenied`, ...).
    pub code: String,
    /// Its message.
    pub message: String,
    /// The key asked for, for errors about an object.
    pub key: Option<String>,
    /// The bucket, for errors about the bucket.
    pub bucket: Option<String>,
    /// A sentence for the reader below the list (grids3's own: how the bucket is chosen, on a
    /// NoSuchBucket page, which AWS's endpoint does not add).
    pub hint: Option<String>,
}

impl Failure {
    /// An error about the object `key`.
    pub fn of_key(e: &crate::error::S3Error, key: &str) -> Self {
        Self {
            status: e.status,
            code: e.code.to_owned(),
            message: e.message.clone(),
            key: Some(key.to_owned()),
            bucket: None,
            hint: None,
        }
    }

    /// An error about the bucket `bucket` (or the request as a whole, when `None`).
    pub fn of_bucket(e: &crate::error::S3Error, bucket: Option<&str>) -> Self {
        Self {
            status: e.status,
            code: e.code.to_owned(),
            message: e.message.clone(),
            key: None,
            bucket: bucket.map(str::to_owned),
            hint: None,
        }
    }

    /// The same failure with `hint` below its list.
    pub fn with_hint(mut self, hint: String) -> Self {
        self.hint = Some(hint);
        self
    }

    fn items(&self) -> String {
        let mut out = format!(
            "<li>Code: {}</li>\n<li>Message: {}</li>\n",
            escape(&self.code),
            escape(&self.message)
        );
        if let Some(b) = &self.bucket {
            out.push_str(&format!("<li>BucketName: {}</li>\n", escape(b)));
        }
        if let Some(k) = &self.key {
            out.push_str(&format!("<li>Key: {}</li>\n", escape(k)));
        }
        out
    }
}

/// The page for `failure`; `nested` is why the custom error document could not be served
/// instead, as AWS adds it.
pub fn render(failure: &Failure, nested: Option<&Failure>, request_id: &str) -> String {
    let title = format!(
        "{} {}",
        failure.status.as_u16(),
        failure.status.canonical_reason().unwrap_or("Error")
    );
    let mut out = format!(
        "<html>\n<head><title>{title}</title></head>\n<body>\n<h1>{title}</h1>\n<ul>\n{}<li>RequestId: {id}</li>\n<li>HostId: {id}</li>\n</ul>\n",
        failure.items(),
        id = escape(request_id),
    );
    if let Some(h) = &failure.hint {
        out.push_str(&format!("<p>{}</p>\n", escape(h)));
    }
    if let Some(n) = nested {
        out.push_str(&format!(
            "<h3>An Error Occurred While Attempting to Retrieve a Custom Error Document</h3>\n<ul>\n{}</ul>\n",
            n.items()
        ));
    }
    out.push_str("<hr/>\n</body>\n</html>\n");
    out
}

/// The error response: the page, or for a HEAD no body and the error in headers (as AWS's
/// website endpoint answers a HEAD).
pub fn response(
    failure: &Failure,
    nested: Option<&Failure>,
    request_id: &str,
    head: bool,
) -> Response {
    let body = if head {
        Body::empty()
    } else {
        Body::from(render(failure, nested, request_id))
    };
    let mut r = Response::new(body);
    *r.status_mut() = failure.status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if head {
        for (name, value) in [
            ("x-amz-error-code", Some(&failure.code)),
            ("x-amz-error-message", Some(&failure.message)),
            ("x-amz-error-detail-key", failure.key.as_ref()),
        ] {
            if let Some(v) = value.and_then(|v| HeaderValue::from_str(v).ok()) {
                h.insert(name, v);
            }
        }
    }
    if failure.status == StatusCode::METHOD_NOT_ALLOWED {
        h.insert(
            header::ALLOW,
            HeaderValue::from_static("GET, HEAD, OPTIONS"),
        );
    }
    if failure.status == StatusCode::SERVICE_UNAVAILABLE {
        h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_lists_the_error_and_escapes_every_value() {
        let f = Failure {
            status: StatusCode::NOT_FOUND,
            code: "NoSuchKey".into(),
            message: "The specified key does not exist.".into(),
            key: Some("<script>alert(1)</script>&\"x\"".into()),
            bucket: None,
            hint: None,
        };
        let nested = Failure {
            status: StatusCode::FORBIDDEN,
            code: "AccessDenied".into(),
            message: "Access Denied".into(),
            key: Some("error.html".into()),
            bucket: None,
            hint: None,
        };
        let page = render(&f, Some(&nested), "ABC123");
        assert!(page.starts_with("<html>\n<head><title>404 Not Found</title></head>"));
        assert!(page.contains("<li>Code: NoSuchKey</li>"));
        assert!(
            page.contains("<li>Key: &lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;x&quot;</li>")
        );
        assert!(!page.contains("<script>"));
        assert!(page.contains("<li>RequestId: ABC123</li>"));
        assert!(page.contains("Custom Error Document</h3>\n<ul>\n<li>Code: AccessDenied</li>"));
        assert!(page.contains("<li>Key: error.html</li>"));
        let head = response(&f, None, "ABC123", true);
        assert_eq!(head.status(), StatusCode::NOT_FOUND);
        assert_eq!(head.headers()["x-amz-error-code"], "NoSuchKey");
        assert_eq!(
            head.headers()["x-amz-error-detail-key"],
            "<script>alert(1)</script>&\"x\""
        );
    }
}
