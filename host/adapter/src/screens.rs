//! A screen component (WIT world `screen`) as the guard's [`Screener`]: a user's own
//! detector, run in a fresh sandbox instance for each text.

use wasmgate_core::{BoxError, BoxFuture};
use wasmgate_guard::Screener;
use wasmgate_sandbox::{Screen, ScreenRequest};

/// A loaded screen component, for the guard.
#[derive(Debug, Clone)]
pub struct ScreenComponent {
    screen: Screen,
    name: String,
}

impl ScreenComponent {
    /// `screen`, known in flags as `name`.
    #[must_use]
    pub fn new(name: &str, screen: Screen) -> Self {
        Self { screen, name: name.to_owned() }
    }
}

impl Screener for ScreenComponent {
    fn name(&self) -> &str {
        &self.name
    }

    fn screen<'a>(
        &'a self,
        provider: &'a str,
        subject: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<Vec<(String, String)>, BoxError>> {
        Box::pin(async move {
            let request =
                ScreenRequest { provider: provider.to_owned(), subject: subject.to_owned(), text: text.to_owned() };
            match self.screen.screen(request).await {
                Ok(found) => Ok(found.into_iter().map(|f| (f.rule, f.description)).collect()),
                Err(error) => Err(error.into()),
            }
        })
    }
}
