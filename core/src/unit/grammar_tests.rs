//! The unit-file grammar as quadlet reads it: named regressions for each way refit once read a
//! unit differently from quadlet, and properties over generated unit text.

use super::file::{Entry, ParseError, UnitFile, check_value};
use proptest::prelude::*;

fn parse(text: &str) -> UnitFile {
    UnitFile::parse(text).expect("parses")
}

fn entries<'a>(u: &'a UnitFile, section: &str, key: &'a str) -> Vec<&'a str> {
    u.values(section, key).collect()
}

#[test]
fn a_repeated_section_takes_its_later_entries() {
    // containers.podman writes `quadlet_options` this way: [Unit] again after [Install].
    let u = parse(
        "[Unit]\nDescription=x\n[Container]\nImage=a:1\n[Install]\nWantedBy=default.target\n\
         [Unit]\nAfter=db.service\nRequires=db.service\n",
    );
    assert_eq!(entries(&u, "Unit", "After"), ["db.service"]);
    assert_eq!(entries(&u, "Unit", "Requires"), ["db.service"]);
    assert!(entries(&u, "Container", "After").is_empty());
    assert!(entries(&u, "Install", "After").is_empty());
    assert_eq!(
        u.render(),
        "[Unit]\nDescription=x\nAfter=db.service\nRequires=db.service\n\n[Container]\nImage=a:1\n\n\
         [Install]\nWantedBy=default.target\n"
    );
}

#[test]
fn a_continuation_joins_without_a_space() {
    let u = parse("[Container]\nImage=a:1\nExec=/bin/echo hello\\\nworld\n");
    assert_eq!(u.value("Container", "Exec"), Some("/bin/echo helloworld"));
    // Space before the backslash is kept, space before the next line's text is not.
    let u = parse("[Container]\nImage=a:1\nExec=sleep \\\n    10\n");
    assert_eq!(u.value("Container", "Exec"), Some("sleep 10"));
    // On the last line the backslash is dropped.
    let u = parse("[Container]\nImage=a:1\nExec=true\\");
    assert_eq!(u.value("Container", "Exec"), Some("true"));
}

#[test]
fn a_comment_or_blank_line_inside_a_continuation_is_skipped() {
    let u = parse(
        "[Container]\nImage=a:1\nExec=/bin/echo a \\\n# why\n\n; more\n  b\\\n\nc\nLabel=x\n",
    );
    assert_eq!(u.value("Container", "Exec"), Some("/bin/echo a bc"));
    assert_eq!(u.value("Container", "Label"), Some("x"));
}

#[test]
fn a_quoted_image_is_read_without_its_quotes() {
    let u = parse("[Container]\nImage=\"localhost/app\"\n");
    assert_eq!(u.value("Container", "Image"), Some("localhost/app"));
    // The text keeps the quotes: quadlet writes them into the service as they are.
    assert_eq!(entries(&u, "Container", "Image"), ["\"localhost/app\""]);
    // Only a matched pair is taken off.
    let u = parse("[Container]\nImage=\"a\nExec=\"x\" y\n");
    assert_eq!(u.value("Container", "Image"), Some("\"a"));
    assert_eq!(u.value("Container", "Exec"), Some("\"x\" y"));
}

#[test]
fn escapes_stay_in_the_value_as_written() {
    let u = parse("[Container]\nImage=a:1\nEnvironment=\"A=x y\" B=\\\"q\\\"\\ z\n");
    assert_eq!(
        entries(&u, "Container", "Environment"),
        ["\"A=x y\" B=\\\"q\\\"\\ z"]
    );
    assert_eq!(
        crate::unit::words::split(u.value("Container", "Environment").expect("set")),
        ["A=x y", "B=\"q\" z"]
    );
}

#[test]
fn headers_and_keys_are_read_as_quadlet_reads_them() {
    // A header is not trimmed inside its brackets; spaces after it are allowed.
    let u = parse("[ Container ]\t \nImage=a:1\n");
    assert_eq!(u.sections[0].name, " Container ");
    // A key is whatever comes before the first `=`, spaces around it dropped.
    let u = parse("[Container]\nMy Key  =  v=w\n");
    assert_eq!(u.sections[0].entries, [Entry::new("My Key", "v=w")]);
    assert!(matches!(
        UnitFile::parse("[A]\n=v\n"),
        Err(ParseError::Syntax(2, _))
    ));
    assert!(matches!(
        UnitFile::parse("[]\n"),
        Err(ParseError::Section(1, _))
    ));
    assert!(matches!(
        UnitFile::parse("[a[b]\n"),
        Err(ParseError::Section(1, _))
    ));
    // The line number is the continuation's first line.
    assert!(matches!(
        UnitFile::parse("[A]\nx\\\ny\n"),
        Err(ParseError::Syntax(2, _))
    ));
}

/// One line of unit text, as people write them.
fn line() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        Just("Unit"),
        Just("Container"),
        Just("Service"),
        Just("Install")
    ];
    let pad = "[ \t]{0,2}";
    prop_oneof![
        (name, pad).prop_map(|(n, p)| format!("[{n}]{p}")),
        (
            pad,
            "[A-Za-z][A-Za-z0-9 _-]{0,8}",
            pad,
            "[ -~]{0,16}",
            "\\\\?"
        )
            .prop_map(|(a, k, b, v, c)| format!("{a}{k}{b}={v}{c}")),
        "[#;][ -~]{0,10}",
        Just(String::new()),
        "[ -~]{0,10}\\\\?",
    ]
}

proptest! {
    /// What refit renders from a unit it read, it reads back as the same unit: the text refit
    /// writes means what the text it was given meant. Units holding a value `render` could not
    /// write as it is (a backslash or white space at the very end of the file) are left out.
    #[test]
    fn reading_what_was_rendered_gives_the_same_unit(lines in proptest::collection::vec(line(), 0..16)) {
        let text = format!("[Container]\n{}\n", lines.join("\n"));
        if let Ok(u) = UnitFile::parse(&text) {
            let writable = u.sections.iter().all(|s| {
                s.entries.iter().all(|e| !e.value.ends_with('\\') && e.value.trim_end() == e.value)
            });
            if writable {
                prop_assert_eq!(UnitFile::parse(&u.render()), Ok(u));
            }
        }
    }

    /// A value split over lines, with comments and blank lines between, is its pieces joined.
    #[test]
    fn continued_pieces_join_as_they_are(
        pieces in proptest::collection::vec("[!-\"$-:<-~][ -~]{0,8}[!-Z^-~]", 1..5),
        noise in proptest::collection::vec(prop_oneof![Just(""), Just("# c"), Just("; c")], 4),
    ) {
        let mut text = String::from("[Container]\nExec=");
        for (i, p) in pieces.iter().enumerate() {
            text.push_str(p);
            if i + 1 < pieces.len() {
                text.push_str("\\\n");
                text.push_str(noise[i % noise.len()]);
                text.push_str("\n  ");
            }
        }
        text.push('\n');
        let u = UnitFile::parse(&text).expect("parses");
        let joined = pieces.concat();
        prop_assert_eq!(u.values("Container", "Exec").collect::<Vec<_>>(), vec![joined.as_str()]);
        prop_assert!(check_value(&joined).is_ok());
    }
}
