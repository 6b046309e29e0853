//! render: structured options and `content` to the unit refit writes.

use super::*;
use proptest::prelude::*;
use serde_json::json;

fn opts(v: Value) -> ContainerOptions {
    serde_json::from_value(v).expect("options")
}

fn render(o: &ContainerOptions) -> Result<RenderedUnit, RenderError> {
    super::render(o, &|k, _| format!("refit-test-{k}"))
}

proptest! {
    /// An `env` value comes back from quadlet's word splitting exactly as it was given.
    #[test]
    fn quoted_words_split_back(v in "[ -~é€]{0,24}") {
        let word = format!("K={v}");
        prop_assert_eq!(crate::unit::words::split(&quote_word(&word)), vec![word]);
    }
}

#[test]
fn secret_env_values_stay_out_of_the_unit() {
    let r = render(&opts(
        json!({"image": "a:1", "secret_env": {"DB_PASSWORD": "hunter22"}}),
    ))
    .expect("renders");
    let text = r.unit.render();
    assert!(!text.contains("hunter22"), "{text}");
    assert!(
        text.contains("Secret=refit-test-DB_PASSWORD,type=env,target=DB_PASSWORD"),
        "{text}"
    );
    assert_eq!(
        render(&opts(json!({"image": "a:1", "secret_env": {"A B": "x"}}))),
        Err(RenderError::EnvName("secret_env.A B".into()))
    );
    assert_eq!(
        render(&opts(json!({"image": "a:1", "env": {"A=B": "x"}}))),
        Err(RenderError::EnvName("env.A=B".into()))
    );
    assert_eq!(
        render(&opts(json!({"image": "a:1", "secret_env": {"A": ""}}))),
        Err(RenderError::EmptySecret("secret_env.A".into()))
    );
}

#[test]
fn values_a_unit_cannot_hold_are_refused_by_parameter() {
    assert_eq!(
        render(&opts(json!({"image": "a:1", "exec": "sleep 1 "}))),
        Err(RenderError::Value {
            param: "exec".into(),
            why: Unrepresentable::Padding
        })
    );
    assert_eq!(
        render(&opts(
            json!({"image": "a:1", "volumes": ["a:/b", "c:/d\\"]})
        )),
        Err(RenderError::Value {
            param: "volumes[1]".into(),
            why: Unrepresentable::TrailingBackslash
        })
    );
}

#[test]
fn structured_options_render_a_unit() {
    let r = render(&opts(json!({
        "image": "127.0.0.1:5000/svc:1.0",
        "env": {"PORT": 18080, "GREETING": "hello world"},
        "volumes": ["app-data:/data"],
        "network": "host",
        "health_cmd": "wget -q -O /dev/null http://127.0.0.1:18080/version",
        "health_interval": "1s",
        "labels": {"tier": "web"},
        "unit": ["After=db.service"],
        "service": ["Restart=on-failure"],
        "install": ["WantedBy=multi-user.target"],
    })))
    .expect("renders");
    insta::assert_snapshot!(r.unit.render());
}

#[test]
fn newlines_and_bad_pairs_are_refused() {
    assert_eq!(
        render(&opts(
            json!({"image": "a:1", "env": {"X": "1\nExecStartPre=/bin/evil"}})
        )),
        Err(RenderError::Value {
            param: "env.X".into(),
            why: Unrepresentable::Newline
        })
    );
    assert!(matches!(
        render(&opts(json!({"image": "a:1", "service": ["Restart"]}))),
        Err(RenderError::NotAPair { .. })
    ));
    assert_eq!(
        render(&opts(json!({"env": {"A": "1"}}))),
        Err(RenderError::NoImage)
    );
}

#[test]
fn an_image_or_build_unit_is_not_taken_for_a_registry_name() {
    for image in ["app.image", "\"app.build\""] {
        let content = format!("[Container]\nImage={image}\n");
        let r = render(&opts(json!({ "content": content }))).expect("renders");
        assert_eq!(
            r.image,
            Some(ImageSource::Unit(image.trim_matches('"').into()))
        );
    }
}

#[test]
fn other_kinds_take_content_alone() {
    use crate::unit::Kind;
    let r = super::render_kind(
        Kind::Network,
        &opts(json!({"content": "[Network]\nInternal=true\n"})),
        &|k, _| k.to_string(),
    )
    .expect("renders");
    assert_eq!(r.image, None);
    assert_eq!(r.unit.render(), "[Network]\nInternal=true\n");
    assert_eq!(
        super::render_kind(
            Kind::Volume,
            &opts(json!({"content": "[Volume]\n", "env": {"A": "1"}})),
            &|k, _| k.to_string(),
        ),
        Err(RenderError::ContentOnly {
            kind: Kind::Volume,
            param: "env"
        })
    );
    assert!(matches!(
        super::render_kind(
            Kind::Pod,
            &opts(json!({"content": "[Pod]\nServiceName=x\n"})),
            &|k, _| k.to_string(),
        ),
        Err(RenderError::ServiceName(_))
    ));
}

#[test]
fn content_needs_an_image() {
    assert_eq!(
        render(&opts(json!({"content": "[Container]\nExec=sleep 1\n"}))),
        Err(RenderError::NoImage)
    );
}
