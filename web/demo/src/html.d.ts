// The build's text loader makes an imported .html file its text (the view card, dist/card.html).
declare module "*.html" {
  const text: string;
  export default text;
}
