// The confirmation dialog every action goes through: an in-page modal
// (index.html's #modal) rather than window.confirm, so that it can show
// what the action would do, and its error when it fails.
import { h, replace } from './dom.js';

// confirmAction shows title and body (nodes) with Cancel and a confirm
// button labelled confirmLabel. Confirming runs act(); the dialog closes
// when it succeeds and shows its error when it fails. It resolves to
// true when act ran and succeeded, false when the operator canceled.
export function confirmAction({ title, body, confirmLabel = 'Confirm', act }) {
  const modal = document.getElementById('modal');
  const titleEl = document.getElementById('modal-title');
  const bodyEl = document.getElementById('modal-body');
  const errorEl = document.getElementById('modal-error');
  const confirm = document.getElementById('modal-confirm');
  const cancel = document.getElementById('modal-cancel');
  replace(titleEl, title);
  replace(bodyEl, ...(Array.isArray(body) ? body : [body]));
  replace(errorEl);
  confirm.textContent = confirmLabel;
  confirm.disabled = false;
  modal.hidden = false;
  confirm.focus();

  return new Promise((resolve) => {
    const close = (result) => {
      modal.hidden = true;
      confirm.onclick = null;
      cancel.onclick = null;
      document.removeEventListener('keydown', onKey);
      resolve(result);
    };
    const onKey = (e) => { if (e.key === 'Escape') close(false); };
    document.addEventListener('keydown', onKey);
    cancel.onclick = () => close(false);
    confirm.onclick = async () => {
      confirm.disabled = true;
      replace(errorEl);
      try {
        await act();
        close(true);
      } catch (err) {
        replace(errorEl, h('p', { class: 'error' }, err.message));
        confirm.disabled = false;
      }
    };
  });
}
