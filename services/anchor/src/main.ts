import { runService } from '@cairn/runtime';
import { anchorService } from './service.js';

runService(anchorService());
