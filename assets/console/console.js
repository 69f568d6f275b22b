// The console's script: confirmations and the copy button. Pages work without it.
document.addEventListener('click', function (e) {
  var t = e.target;
  if (t.dataset && t.dataset.confirm && !window.confirm(t.dataset.confirm)) {
    e.preventDefault();
  }
  if (t.dataset && t.dataset.copy) {
    var input = document.getElementById(t.dataset.copy);
    input.select();
    if (navigator.clipboard) { navigator.clipboard.writeText(input.value); }
    t.textContent = 'Copied';
  }
});
