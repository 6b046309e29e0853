//! systemd's word splitting, as quadlet applies it to `Environment=` and friends: words split
//! on white space, with "double" and 'single' quotes and backslash escapes.

pub fn split(value: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (_, '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
                in_word = true;
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

#[cfg(test)]
mod tests {
    #[test]
    fn quotes_and_escapes() {
        assert_eq!(
            super::split(r#"A=1 "B=two words" C=x\ y 'D="q"'"#),
            ["A=1", "B=two words", "C=x y", "D=\"q\""]
        );
    }
}
