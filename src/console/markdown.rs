//! Markdown previews (pulldown-cmark), made safe to place in the console's own page: raw HTML
//! in the document is shown as text (except HTML comments, which a README uses for notes to
//! its editors and which no renderer shows), links keep only http, https and mailto targets (and
//! in-page anchors), and images become links (the console loads no image from elsewhere,
//! and its CSP would refuse one). Everything else is escaped by the renderer.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// Whether a link's target may stay a link.
fn safe_target(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    lower.starts_with("http://")
        || lower.starts_with("https://")
        || lower.starts_with("mailto:")
        || lower.starts_with('#')
}

/// The part of raw HTML that is not inside a comment (`<!-- ... -->`); `in_comment` carries a
/// comment that spans events (an HTML block comes a line at a time).
fn outside_comments(h: &str, in_comment: &mut bool) -> String {
    let mut out = String::new();
    let mut rest = h;
    loop {
        if *in_comment {
            match rest.find("-->") {
                Some(end) => {
                    rest = &rest[end + 3..];
                    *in_comment = false;
                }
                None => return out,
            }
        } else {
            match rest.find("<!--") {
                Some(start) => {
                    out.push_str(&rest[..start]);
                    rest = &rest[start + 4..];
                    *in_comment = true;
                }
                None => {
                    out.push_str(rest);
                    return out;
                }
            }
        }
    }
}

/// The HTML of a Markdown document, safe to embed.
pub fn render(text: &str) -> String {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    opts.insert(Options::ENABLE_TASKLISTS);
    // Which links were dropped, so that their ends are dropped too (links nest in nothing).
    let mut dropped = Vec::new();
    let mut events = Vec::new();
    let mut in_comment = false;
    for e in Parser::new_ext(text, opts) {
        let e = match e {
            // Markup in the document is shown as what it is; comments are not shown.
            Event::Html(h) | Event::InlineHtml(h) => {
                let shown = outside_comments(&h, &mut in_comment);
                (!shown.is_empty()).then(|| Event::Text(shown.into()))
            }
            // An image becomes a link: the console loads no image from elsewhere.
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            })
            | Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                // An e-mail autolink (`<a@b.c>`) is written `mailto:` by the renderer.
                let keep = link_type == pulldown_cmark::LinkType::Email || safe_target(&dest_url);
                dropped.push(!keep);
                keep.then_some(Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                }))
            }
            // A comment ends with the block that holds it, closed or not.
            Event::End(end @ (TagEnd::HtmlBlock | TagEnd::Paragraph)) => {
                in_comment = false;
                Some(Event::End(end))
            }
            // A dropped link's end goes with it.
            Event::End(TagEnd::Link) | Event::End(TagEnd::Image) => {
                (!dropped.pop().unwrap_or(false)).then_some(Event::End(TagEnd::Link))
            }
            other => Some(other),
        };
        events.extend(e);
    }
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, events.into_iter());
    out
}

/// Whether an object is shown as Markdown: by its type, or by its name when the type is a
/// generic text one.
pub fn is_markdown(content_type: &str, key: &str) -> bool {
    let ct = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let named = {
        let k = key.to_ascii_lowercase();
        k.ends_with(".md") || k.ends_with(".markdown")
    };
    ct == "text/markdown" || ct == "text/x-markdown" || (named && ct == "text/plain")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_renders_and_markup_stays_text() {
        let html = render("# Title\n\nSome *text* and a [link](https://example.com).\n\n| a | b |\n|---|---|\n| 1 | 2 |\n");
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(html.contains("<em>text</em>"));
        assert!(html.contains("<a href=\"https://example.com\">link</a>"));
        assert!(html.contains("<table>"));
        let html = render("<script>alert(1)</script>\n\nx <img src=x onerror=alert(1)> y");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }

    #[test]
    fn comments_are_not_shown() {
        let html = render("# Title\n\n<!-- a note\nover two lines -->\n\nText <!-- inline --> here.\n\n<!-- one --><b>bold</b>\n");
        assert!(
            !html.contains("note") && !html.contains("inline") && !html.contains("one"),
            "{html}"
        );
        assert!(
            !html.contains("&lt;!--") && !html.contains("--&gt;"),
            "{html}"
        );
        assert!(html.contains("Text") && html.contains("here."), "{html}");
        assert!(
            html.contains("&lt;b&gt;bold&lt;/b&gt;"),
            "markup after a comment stays text: {html}"
        );
        // An unclosed comment hides the rest of the HTML block, as a browser would.
        assert!(!render("<!-- open\nstill\n").contains("still"));
    }

    #[test]
    fn only_safe_links_and_no_images() {
        let html = render("[a](javascript:alert(1)) [b](JaVaScRiPt:alert(1)) [c](data:text/html,x) [d](mailto:x@y.z) [e](#top)");
        assert!(!html.to_ascii_lowercase().contains("javascript:"), "{html}");
        assert!(!html.contains("data:"), "{html}");
        assert!(html.contains("href=\"mailto:x@y.z\""));
        assert!(html.contains("href=\"#top\""));
        assert!(render("<a@b.c>").contains("href=\"mailto:a@b.c\""));
        assert!(html.contains(">a<") || html.contains("a "), "{html}");
        let html = render("![logo](https://example.com/x.png) ![bad](javascript:x)");
        assert!(!html.contains("<img"), "{html}");
        assert!(
            html.contains("<a href=\"https://example.com/x.png\">logo</a>"),
            "{html}"
        );
        assert!(
            html.contains("bad") && !html.contains("javascript"),
            "{html}"
        );
        assert!(is_markdown("text/markdown; charset=utf-8", "x"));
        assert!(is_markdown("text/plain", "README.md"));
        assert!(!is_markdown("text/html", "README.md"));
    }
}
