//! Single sign-on's routes (the flow is `console::sso`): `/login/sso` sends the browser to
//! the provider; the provider sends it back to `GET /login/sso/callback`, a page that changes
//! nothing and whose script posts the result, with the tab's own `bind`, to
//! `POST /login/sso/callback`, which signs in.

use super::*;
use crate::console::sso;

/// The callback parameters a provider sends that are posted back (nothing else is).
const CALLBACK_FIELDS: [&str; 3] = ["code", "state", "error"];

fn with_cookie(mut r: Response, cookie: &str) -> Response {
    if let Ok(v) = HeaderValue::from_str(cookie) {
        r.headers_mut().append(header::SET_COOKIE, v);
    }
    r
}

/// The sign-in page with what went wrong.
fn refused(st: &AppState, e: &sso::SsoError) -> Response {
    let mut r = html(views::Login {
        who: String::new(),
        csrf: String::new(),
        root: false,
        error: Some(e.message()),
        access_key: String::new(),
        sso: sso::label(st),
    });
    *r.status_mut() = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_REQUEST);
    r
}

fn client_address(parts: &Parts) -> String {
    parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip().to_string())
        .unwrap_or_default()
}

/// GET /login/sso?bind=...
pub async fn sso_start(State(st): State<AppState>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let q = pairs(parts.uri.query().unwrap_or(""));
    let bind = field(&q, "bind").unwrap_or_default();
    match sso::start(&st, &parts, tls(&st, &parts), bind).await {
        Ok((to, cookie)) => with_cookie(see_other(&to), &cookie),
        Err(e) => refused(&st, &e),
    }
}

/// GET /login/sso/callback: the page that posts the callback back from this origin.
pub async fn sso_callback(State(st): State<AppState>, req: Request) -> Response {
    if sso::settings(&st).is_none() {
        return refused(&st, &sso::SsoError::Off);
    }
    let (parts, _) = req.into_parts();
    let q = pairs(parts.uri.query().unwrap_or(""));
    let fields = q
        .into_iter()
        .filter(|(k, v)| CALLBACK_FIELDS.contains(&k.as_str()) && v.len() <= 4096)
        .collect();
    html(views::SsoFinish {
        who: String::new(),
        csrf: String::new(),
        root: false,
        error: None,
        fields,
    })
}

/// POST /login/sso/callback: signs in.
pub async fn sso_finish(State(st): State<AppState>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let f = match form(body, MAX_FORM).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let tls = tls(&st, &parts);
    // A refusal leaves the pending cookie be: a post this browser did not mean (another
    // page's) must not end a sign-in under way. A spent one is refused by its state.
    let fail = |e: sso::SsoError| refused(&st, &e);
    if let Err(e) = session::same_origin(&st, &parts) {
        return fail(sso::SsoError::Stale(reason(&e)));
    }
    let checked = match sso::check(&st, &parts, &f, tls) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let client = client_address(&parts);
    match session::throttle_take(&st, "sso", &client).await {
        Ok(true) => {}
        Ok(false) => {
            let mut r = fail(sso::SsoError::Refused(
                "Too many failed sign-ins lately: wait a few minutes and try again.".into(),
            ));
            *r.status_mut() = StatusCode::TOO_MANY_REQUESTS;
            return r;
        }
        Err(e) => return fail(sso::SsoError::Internal(e.to_string())),
    }
    let s = match sso::finish(&st, &parts, &f, checked).await {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let done = async {
        session::throttle_release(&st, "sso", &client).await?;
        // A session this browser still had ends now, not unseen at its own time.
        session::end_previous(&st, &parts).await
    };
    if let Err(e) = done.await {
        return fail(sso::SsoError::Internal(e.to_string()));
    }
    let r = with_cookie(see_other("/"), &session::set_cookie(&st, Some(&s.id), tls));
    with_cookie(r, &sso::clear_cookie(tls))
}
