"""The store as one self-contained HTML page (`rmqtool report`), drawn from "the picture" (the document
`ops.picture.store_picture` builds): inline SVG charts the project draws, each with its numbers in a
table under it, one `<style>`, one small `<script>` that marks each chart laid out, and a Content Security
Policy that lets nothing leave the page. Imports only the standard library and rmqtool.text.
The page is `document.render`; this package runs nothing, so no module of it imports it back."""
