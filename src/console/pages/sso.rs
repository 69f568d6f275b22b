//! Single sign-on's two routes (the flow is `console::sso`): `/login/sso` sends the browser
//! to the provider, `/login/sso/callback` brings it back signed in.

use super::*;
use crate::console::sso;

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

/// GET /login/sso.
pub async fn sso_start(State(st): State<AppState>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    match sso::start(&st, &parts, tls(&parts)).await {
        Ok((to, cookie)) => with_cookie(see_other(&to), &cookie),
        Err(e) => refused(&st, &e),
    }
}

/// GET /login/sso/callback.
pub async fn sso_callback(State(st): State<AppState>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let tls = tls(&parts);
    let q = pairs(parts.uri.query().unwrap_or(""));
    // The pending sign-in is used once, whatever comes of it.
    let clear = sso::clear_cookie(tls);
    match sso::finish(&st, &parts, &q, tls).await {
        Ok(s) => {
            let who = s.sso.as_ref().map(|x| x.arn.clone()).unwrap_or_default();
            let r = html(views::SignedIn { who });
            let r = with_cookie(r, &session::set_cookie(&st, Some(&s.id), tls));
            with_cookie(r, &clear)
        }
        Err(e) => with_cookie(refused(&st, &e), &clear),
    }
}
