//! The seams between crates are typed: no public function, trait method or conversion of
//! the host crates gives its error as a `String` (nested generics included, such as a
//! `BoxFuture<'_, Result<bool, String>>`). A string says what went wrong to a person; a
//! caller that must act on it, or keep its cause, needs a type.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A place that gives a `String` as an error.
#[derive(Debug, PartialEq, Eq)]
struct Finding {
    file: String,
    line: usize,
    what: String,
}

/// Walks one file's items: public functions, the methods of public traits, and the
/// `Err`/`Error` types of conversions.
struct Seams<'a> {
    file: &'a str,
    found: Vec<Finding>,
    /// Inside a public trait: its methods have no visibility of their own.
    in_public_trait: bool,
}

impl Seams<'_> {
    fn note(&mut self, span: proc_macro2::Span, what: String) {
        self.found.push(Finding { file: self.file.to_owned(), line: span.start().line, what });
    }

    fn check_signature(&mut self, sig: &syn::Signature) {
        if let syn::ReturnType::Type(_, ty) = &sig.output
            && gives_string_error(ty)
        {
            self.note(sig.ident.span(), format!("fn {}", sig.ident));
        }
    }
}

impl<'ast> Visit<'ast> for Seams<'_> {
    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if matches!(item.vis, syn::Visibility::Public(_)) {
            self.check_signature(&item.sig);
        }
        syn::visit::visit_item_fn(self, item);
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if matches!(item.vis, syn::Visibility::Public(_)) {
            self.check_signature(&item.sig);
        }
        syn::visit::visit_impl_item_fn(self, item);
    }

    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        let outer = self.in_public_trait;
        self.in_public_trait = matches!(item.vis, syn::Visibility::Public(_));
        syn::visit::visit_item_trait(self, item);
        self.in_public_trait = outer;
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if self.in_public_trait {
            self.check_signature(&item.sig);
        }
        syn::visit::visit_trait_item_fn(self, item);
    }

    fn visit_impl_item_type(&mut self, item: &'ast syn::ImplItemType) {
        if (item.ident == "Err" || item.ident == "Error") && is_string(&item.ty) {
            self.note(item.ident.span(), format!("type {} = String", item.ident));
        }
        syn::visit::visit_impl_item_type(self, item);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        // Tests may say what they like.
        let is_test = item.attrs.iter().any(|a| a.path().is_ident("cfg") && quote_of(a).contains("test"));
        if !is_test {
            syn::visit::visit_item_mod(self, item);
        }
    }
}

fn quote_of(attribute: &syn::Attribute) -> String {
    match &attribute.meta {
        syn::Meta::List(list) => list.tokens.to_string(),
        _ => String::new(),
    }
}

fn is_string(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "String" && s.arguments.is_none()))
}

/// Whether `ty` is, or holds anywhere in its generic arguments, a `Result<_, String>`.
fn gives_string_error(ty: &syn::Type) -> bool {
    struct Finder(bool);
    impl<'ast> Visit<'ast> for Finder {
        fn visit_path_segment(&mut self, segment: &'ast syn::PathSegment) {
            if segment.ident == "Result"
                && let syn::PathArguments::AngleBracketed(args) = &segment.arguments
            {
                let types: Vec<&syn::Type> = args
                    .args
                    .iter()
                    .filter_map(|a| match a {
                        syn::GenericArgument::Type(t) => Some(t),
                        _ => None,
                    })
                    .collect();
                if types.len() == 2 && is_string(types[1]) {
                    self.0 = true;
                }
            }
            syn::visit::visit_path_segment(self, segment);
        }
    }
    let mut finder = Finder(false);
    finder.visit_type(ty);
    finder.0
}

fn findings_in(file: &str, source: &str) -> Vec<Finding> {
    let parsed = syn::parse_file(source).unwrap_or_else(|e| panic!("{file} does not parse: {e}"));
    let mut seams = Seams { file: file.to_owned().leak(), found: Vec::new(), in_public_trait: false };
    seams.visit_file(&parsed);
    seams.found
}

fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn no_public_function_of_the_host_crates_gives_a_string_as_its_error() {
    let host = Path::new(env!("CARGO_MANIFEST_DIR")).join("../host");
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&host).unwrap() {
        let src = krate.unwrap().path().join("src");
        if src.is_dir() {
            sources(&src, &mut files);
        }
    }
    assert!(files.len() > 100, "the host crates' sources were found: {}", files.len());
    let mut found = Vec::new();
    for path in &files {
        let shown = path.strip_prefix(&host).unwrap_or(path).display().to_string();
        // Files that hold only tests, as their names say.
        if shown.ends_with("_tests.rs") || shown.ends_with("/tests.rs") {
            continue;
        }
        found.extend(findings_in(&shown, &std::fs::read_to_string(path).unwrap()));
    }
    let lines: Vec<String> = found.iter().map(|f| format!("host/{}:{}: {}", f.file, f.line, f.what)).collect();
    assert!(lines.is_empty(), "errors given as String:\n{}", lines.join("\n"));
}

#[test]
fn the_check_finds_a_string_error_wherever_it_stands() {
    let source = r#"
        pub fn plain() -> Result<(), String> { Ok(()) }
        pub fn nested<'a>() -> BoxFuture<'a, Result<Option<u8>, String>> { todo!() }
        pub trait Store { fn spend(&self) -> BoxFuture<'_, Result<bool, String>>; }
        pub struct Key;
        impl Key { pub fn load() -> std::result::Result<Self, std::string::String> { todo!() } }
        impl std::str::FromStr for Key { type Err = String; fn from_str(_: &str) -> Result<Self, String> { todo!() } }
        fn private() -> Result<(), String> { Ok(()) }
        pub(crate) fn in_the_crate() -> Result<(), String> { Ok(()) }
        trait Private { fn hidden(&self) -> Result<(), String>; }
        pub fn typed() -> Result<(), std::io::Error> { Ok(()) }
        pub fn text() -> Result<String, std::io::Error> { Ok(String::new()) }
        #[cfg(test)]
        mod tests { pub fn helper() -> Result<(), String> { Ok(()) } }
    "#;
    let what: Vec<String> = findings_in("x.rs", source).into_iter().map(|f| f.what).collect();
    assert_eq!(what, ["fn plain", "fn nested", "fn spend", "fn load", "type Err = String"]);
}

/// The workspace's members, in `Cargo.toml`'s order.
fn members() -> Vec<String> {
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml")).unwrap();
    let list = manifest.split("members = [").nth(1).unwrap().split(']').next().unwrap();
    list.split(',').map(|m| m.trim().trim_matches('"').to_owned()).filter(|m| !m.is_empty()).collect()
}

/// A member's package name, from its manifest.
fn package_name(member: &str) -> String {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(member).join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let line = text.lines().find(|l| l.starts_with("name = ")).unwrap_or_else(|| panic!("{}", manifest.display()));
    line.trim_start_matches("name = ").trim_matches('"').to_owned()
}

#[test]
fn the_architecture_page_draws_every_crate_of_the_workspace_in_its_order() {
    let page = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/ARCHITECTURE.md")).unwrap();
    let table = page.split("## The crates, in call-chain order").nth(1).unwrap().split("\n## ").next().unwrap();
    let drawn: Vec<(String, String)> = table
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(|c| c.trim().trim_matches('`')).collect();
            (cells[1].to_owned(), cells[2].to_owned())
        })
        .collect();
    let members: Vec<(String, String)> = members().into_iter().map(|m| (package_name(&m), m)).collect();
    assert_eq!(drawn, members, "docs/ARCHITECTURE.md's table against Cargo.toml's members, name and folder");
}

#[test]
fn every_library_names_each_of_its_modules_in_its_layout() {
    for member in members() {
        let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(&member).join("src/lib.rs");
        let Ok(text) = std::fs::read_to_string(&lib) else { continue };
        let parsed = syn::parse_file(&text).unwrap();
        let modules: Vec<String> = parsed
            .items
            .iter()
            .filter_map(|item| match item {
                syn::Item::Mod(module) if module.content.is_none() => Some(module),
                _ => None,
            })
            .filter(|module| !module.attrs.iter().any(|a| a.path().is_ident("cfg") && quote_of(a).contains("test")))
            .map(|module| module.ident.to_string())
            .collect();
        if modules.is_empty() {
            continue;
        }
        let layout = text.split("# Layout").nth(1).unwrap_or_else(|| panic!("{member}: lib.rs has no # Layout"));
        for name in modules {
            assert!(layout.contains(&format!("`{name}`")), "{member}: the Layout of lib.rs does not name `{name}`");
        }
    }
}
