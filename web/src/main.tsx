/** The dashboard's entry point (README "The dashboard"). */
import { render } from 'preact';
import { App } from './app';
import './styles.css';

const root = document.getElementById('app');
if (root) render(<App />, root);
