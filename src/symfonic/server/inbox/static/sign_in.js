// Keeps a link's #fragment (/inbox#<pause_id>) across signing in: the form
// posts to the same fragment, and the browser carries it over the redirect
// back to the page, which then shows that pause.
const form = document.querySelector("form.sign-in");
if (form && window.location.hash) form.action = `inbox${window.location.hash}`;
