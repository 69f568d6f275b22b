//! Signing in and out.

use super::*;

/// GET /login.
pub async fn login_page(State(st): State<AppState>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    if let Ok(Some(_)) = session::current(&st, &parts).await {
        return see_other("/");
    }
    html(views::Login {
        who: String::new(),
        csrf: String::new(),
        root: false,
        error: None,
        access_key: String::new(),
        sso: crate::console::sso::label(&st),
    })
}

/// POST /login.
pub async fn login(State(st): State<AppState>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let f = match form(body, MAX_FORM).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    // A refused sign-in keeps the access key typed (never the secret), so that only the
    // secret is typed again.
    let typed = field(&f, "access_key").unwrap_or("").trim().to_owned();
    let page = |status: StatusCode, error: &str| {
        let mut r = html(views::Login {
            who: String::new(),
            csrf: String::new(),
            root: false,
            error: Some(error.to_owned()),
            access_key: typed.clone(),
            sso: crate::console::sso::label(&st),
        });
        *r.status_mut() = status;
        r
    };
    if let Err(e) = session::same_origin(&st, &parts) {
        return page(StatusCode::FORBIDDEN, &reason(&e));
    }
    let client = parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip().to_string())
        .unwrap_or_default();
    let ak = field(&f, "access_key").unwrap_or("").trim();
    let secret = field(&f, "secret").unwrap_or("");
    match session::login(&st, &client, ak, secret).await {
        Ok(Ok(s)) => {
            // A session this browser still had ends now, not unseen at its own time.
            if let Err(e) = session::end_previous(&st, &parts).await {
                return page(e.status, &reason(&e));
            }
            let mut r = see_other("/");
            if let Ok(v) =
                HeaderValue::from_str(&session::set_cookie(&st, Some(&s.id), tls(&st, &parts)))
            {
                r.headers_mut().insert(header::SET_COOKIE, v);
            }
            r
        }
        Ok(Err(session::Refused::Wrong)) => page(
            StatusCode::UNAUTHORIZED,
            "The access key and secret do not match a key of this server.",
        ),
        Ok(Err(session::Refused::Throttled)) => page(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many failed sign-ins lately: wait a few minutes and try again.",
        ),
        Err(e) => page(e.status, &reason(&e)),
    }
}

/// POST /logout.
pub async fn logout(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, _) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    if let Err(e) = session::logout(&st, &ctx.signed.session).await {
        return ctx.message(e.status, "Sign-out failed", Some(e), "/");
    }
    let mut r = see_other("/login");
    if let Ok(v) = HeaderValue::from_str(&session::set_cookie(&st, None, tls(&st, &ctx.parts))) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}
